import Glibc
import LinuxSystem
@testable import PiHardware
import Testing

@Suite("The real libgpiod driver")
struct LibgpiodTests {
    /// The shared libraries mapped into this process, from /proc/self/maps.
    static func mappedLibraries() -> [String] {
        guard let file = fopen("/proc/self/maps", "r") else { return [] }
        defer { fclose(file) }
        var paths = Set<String>()
        var line = [CChar](repeating: 0, count: 4096)
        while fgets(&line, CInt(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let slash = text.firstIndex(of: "/") {
                paths.insert(String(text[slash...].prefix { $0 != "\n" }))
            }
        }
        return paths.sorted()
    }

    @Test("the library that runs has the API this module was compiled for")
    func runtimeMatchesCompileTime() throws {
        let version = GPIOChip.libraryVersion
        let libgpiod = Self.mappedLibraries().filter { $0.contains("libgpiod") }
        print("libgpiod: compiled for the v\(GPIOChip.apiMajorVersion) API, running \(version) from \(libgpiod)")
        // What the build asked for (scripts/test.sh runs the v2 build with GNSSHAT_GPIOD_V2=1),
        // what PiHardware was compiled against, and what the loader found must all agree.
        let requested = getenv("GNSSHAT_GPIOD_V2").map { String(cString: $0) } == "1" ? 2 : 1
        #expect(GPIOChip.apiMajorVersion == requested)
        if GPIOChip.apiMajorVersion == 2 {
            #expect(version.hasPrefix("2."))
            // libgpiod 2.x is libgpiod.so.3, from the private prefix (or where GNSSHAT_GPIOD_V2_LIBDIR
            // says: a system whose own libgpiod is 2.x, as Debian's arm64 sysroot), never a v1.
            let directory = getenv("GNSSHAT_GPIOD_V2_LIBDIR").map { String(cString: $0) } ?? "/libgpiod-v2/prefix/lib"
            #expect(libgpiod.count == 1)
            #expect(libgpiod.allSatisfy { $0.contains("\(directory)/libgpiod.so.3") }, "\(libgpiod)")
        } else {
            #expect(version.hasPrefix("1."))
            #expect(libgpiod.count == 1)
            #expect(libgpiod.allSatisfy { $0.contains("libgpiod.so.2") })
        }
    }

    @Test("a missing chip path is .chipNotFound with the errno")
    func missingChip() {
        #expect(throws: GPIOError.chipNotFound(.path("/dev/gpiochip-missing"), searched: [
            "/dev/gpiochip-missing (No such file or directory (ENOENT))",
        ])) {
            try GPIOChip.open(.path("/dev/gpiochip-missing"))
        }
    }

    @Test("a file that is not a chip is not mistaken for one")
    func notAChip() {
        #expect(throws: GPIOError.self) { try GPIOChip.open(.path("/dev/null")) }
    }

    @Test("gpiod_chip_open errors go through the seam, EINTR retried", arguments: [
        (Errno.permissionDenied, "permissionDenied"), (.noSuchDevice, "vanished"), (.ioError, "failed"),
    ])
    func chipOpen(errno: Errno, expected: String) throws {
        let mock = SeamMock()
        mock.fail("gpiod_chip_open", with: .interrupted, times: 2)
        mock.fail("gpiod_chip_open", with: errno)
        do {
            _ = try SeamMock.$current.withValue(mock) { try GPIOChip.open(.path("/dev/gpiochip0")) }
            Issue.record("no error")
        } catch {
            let error = try #require(error as? GPIOError)
            let name = switch error {
            case .permissionDenied: "permissionDenied"
            case .vanished: "vanished"
            case .failed: "failed"
            default: "\(error)"
            }
            #expect(name == expected)
            #expect(error.failedCall == FailedCall(call: "gpiod_chip_open", device: "/dev/gpiochip0", errno: errno))
        }
        #expect(mock.count("gpiod_chip_open") == 3)
    }

    @Test("auto searches /dev through the seam; an unreadable /dev is a typed error")
    func automaticThroughSeam() throws {
        let mock = SeamMock()
        mock.fail("opendir", with: .permissionDenied)
        let denied = FailedCall(call: "opendir", device: "/dev", errno: .permissionDenied)
        #expect(throws: GPIOError.permissionDenied(denied)) {
            try SeamMock.$current.withValue(mock) { try GPIOChip.open(.automatic) }
        }
        // On a machine with a Pi header chip this finds it; elsewhere it lists what it saw.
        let listed = try GPIOChip.list()
        do {
            let chip = try GPIOChip.open(.automatic)
            #expect(GPIOChipSelector.raspberryPiLabels.contains(chip.info.label))
        } catch {
            #expect(error == .chipNotFound(.automatic, searched: listed.map { "\($0.path) (label \($0.label))" }))
        }
    }
}
