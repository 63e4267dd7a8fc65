// A platform driver of the rig's modules, unbound and bound again through the driver core's sysfs
// files (/sys/bus/platform/drivers/NAME/{unbind,bind}): the device behind it goes away and comes back
// as a real controller's does when its driver unbinds or its USB adapter is pulled out.
//
// The write runs in a child process (`sh -c 'echo ...'`), waited for with a deadline: an unbind can
// block in the kernel (i2c_del_adapter waits until every descriptor of /dev/i2c-N is closed), and a
// thread of this process stuck there would keep it from exiting; a child stuck there does not, so a
// product that never lets go fails the scenario with a verdict instead of hanging the rig.
// Glibc: `posix_spawn` and `waitpid`, the rig's own calls (test code, not under the product's seam).
import Glibc
import LinuxSystem

/// A platform device of the rig and the driver it is bound to.
struct DriverBinding {
    /// The driver's name under /sys/bus/platform/drivers.
    let driver: String
    /// The platform device's name (the modules register one device named as their driver).
    let device: String

    /// The u-blox DDC adapter of ubx_ddc_sim: unbound, /dev/i2c-1 goes away.
    static let ddcAdapter = DriverBinding(driver: "ubx-ddc-sim", device: "ubx-ddc-sim")
    /// The GPIO chip of gnss_gpio_sim: unbound, the chip and its lines go away.
    static let gpioChip = DriverBinding(driver: "gnss-gpio-sim", device: "gnss-gpio-sim")

    private var directory: String { "/sys/bus/platform/drivers/\(driver)" }

    /// Whether the driver is bound to the device now.
    var isBound: Bool { FileSystem.exists("\(directory)/\(device)") }

    /// Starts unbinding the driver from the device; `wait` on the result.
    func startUnbind() throws -> SysfsWrite {
        try SysfsWrite(device, to: "\(directory)/unbind")
    }

    /// Binds the driver to the device again, waiting up to `limit` for the write to return.
    func bind(within limit: Duration) async throws {
        try await SysfsWrite(device, to: "\(directory)/bind").wait(within: limit, "binding \(driver)")
        try expect(isBound, "\(driver) is not bound to \(device) after the bind")
    }

    /// Binds the driver again if it is not bound (after a scenario that failed half-way); errors are
    /// ignored, the next scenario will say what is missing.
    func rebindIfNeeded() async {
        if !isBound { try? await bind(within: .seconds(10)) }
    }
}

/// One write of `text` to a sysfs file, done by a child process (`/bin/sh -c 'echo "$1" > "$2"'`).
struct SysfsWrite {
    let pid: pid_t
    let path: String

    init(_ text: String, to path: String) throws {
        self.path = path
        let arguments = ["/bin/sh", "-c", "echo \"$1\" > \"$2\"", "sh", text, path]
        var argv = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for argument in argv { free(argument) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, "/bin/sh", nil, nil, &argv, environ)
        guard status == 0 else {
            throw SystemError(FailedCall(call: "posix_spawn /bin/sh", device: path, errno: Errno(rawValue: status)))
        }
        pid = child
    }

    /// Waits for the write to return (polled every 10 ms, `waitpid` with `WNOHANG`); fails naming
    /// `what` after `limit`, or when the write failed (the shell's status: the kernel refused it).
    func wait(within limit: Duration, _ what: String) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while true {
            var status: Int32 = 0
            let ended = waitpid(pid, &status, WNOHANG)
            if ended == pid {
                // WTERMSIG and WEXITSTATUS, which Swift does not import (macros).
                let signal = status & 0x7F
                try expect(signal == 0, "\(what): the write to \(path) was killed by signal \(signal) (an oops?)")
                try expect((status >> 8) & 0xFF == 0, "\(what): the write to \(path) failed (the kernel refused it)")
                return
            }
            if ended < 0 && errno != EINTR { throw SystemError.ofLastCall("waitpid", on: path) }
            guard clock.now < deadline else {
                throw ScenarioFailure("\(what): the write to \(path) did not return within \(limit)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
