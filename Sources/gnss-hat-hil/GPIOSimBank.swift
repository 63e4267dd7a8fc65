// The gnss_gpio_sim lines as the outside world of the guest sees them: levels the driver under
// test drives, pulls the harness drives (sysfs attributes of the module's platform device).
import LinuxSystem

/// The gnss_gpio_sim kernel module's bank of lines: line levels as the outside world sees them,
/// and pulls to drive inputs.
struct GPIOSimBank {
    static let device = "/sys/devices/platform/gnss-gpio-sim"
    static let namesParameter = "/sys/module/gnss_gpio_sim/parameters/names"

    /// Line names in offset order, as the module was loaded with.
    let names: [String]

    init() throws {
        names = try SysFile.text(Self.namesParameter).split(separator: ",", omittingEmptySubsequences: false)
            .map(String.init)
    }

    /// The character device of the simulated chip, e.g. `/dev/gpiochip0`.
    func chipPath() throws -> String {
        guard let chip = try FileSystem.entries(of: Self.device).first(where: { $0.hasPrefix("gpiochip") }) else {
            throw ScenarioFailure("no gpiochip under \(Self.device)")
        }
        return "/dev/" + chip
    }

    /// The offset of the line called `name`.
    func offset(of name: String) throws -> Int {
        guard let offset = names.firstIndex(of: name) else {
            throw ScenarioFailure("no simulated line named \(name) (lines: \(names.joined(separator: ",")))")
        }
        return offset
    }

    /// The physical level of line `name`: what a driver drives, else the pull.
    func level(of name: String) throws -> Bool {
        try SysFile.text("\(Self.device)/sim_gpio\(try offset(of: name))/value") == "1"
    }

    /// Drives input line `name` from outside by its pull; a change raises an edge event.
    func setPull(of name: String, high: Bool) throws {
        try SysFile.write(high ? "pull-up" : "pull-down", to: "\(Self.device)/sim_gpio\(try offset(of: name))/pull")
    }

    /// A watch on line `name`'s level, woken by every change the module notifies.
    func watch(_ name: String) throws -> LevelWatch {
        try LevelWatch(path: "\(Self.device)/sim_gpio\(try offset(of: name))/value")
    }

    /// Waits until line `name` is at `level`; returns false when `timeoutMilliseconds` pass
    /// between two notifications first (a bound on a hang, not a timing check).
    func waitForLevel(of name: String, _ level: Bool, timeoutMilliseconds: Int32) throws -> Bool {
        let watch = try watch(name)
        while try watch.level() != level {
            guard try watch.waitForChange(timeoutMilliseconds: timeoutMilliseconds) else {
                return false
            }
        }
        return true
    }
}
