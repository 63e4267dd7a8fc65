// What every test target that runs real programs or reads the captures needs: the package's
// paths, the built `gnss-hat`, Debian tools, and captures without their comment headers. Not a
// test target itself, so the test targets can share it; never shipped.
public import Foundation

/// A test cannot be set up (something missing on the machine); the message says what to do.
public struct TestSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

public enum TestPaths {
    /// The package root (two levels above this file).
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// gpsd's regression captures kept with the package (`Tests/Fixtures/corpus`, whose `gpsd/`
    /// folder holds them), or `$GNSSHAT_CORPUS`.
    public static func corpus() throws -> URL {
        if let override = ProcessInfo.processInfo.environment["GNSSHAT_CORPUS"] {
            return URL(fileURLWithPath: override)
        }
        let fixtures = packageRoot.appendingPathComponent("Tests/Fixtures/corpus")
        guard FileManager.default.fileExists(atPath: fixtures.appendingPathComponent("gpsd").path) else {
            throw TestSetupError("corpus not found at \(fixtures.path)/gpsd (or set GNSSHAT_CORPUS)")
        }
        return fixtures
    }

    /// The `gnss-hat` executable built next to this test bundle (`swift build --build-tests` builds
    /// it), or `$GNSSHAT_BINARY`.
    public static func gnssHat() throws -> URL {
        try builtExecutable("gnss-hat", override: "GNSSHAT_BINARY")
    }

    /// An executable of this package built next to this test bundle, or the path in `$override`.
    public static func builtExecutable(_ name: String, override: String? = nil) throws -> URL {
        var candidates: [URL] = []
        if let override, let path = ProcessInfo.processInfo.environment[override] {
            candidates.append(URL(fileURLWithPath: path))
        }
        for argument in [Bundle.main.executablePath, CommandLine.arguments.first].compactMap({ $0 }) {
            var directory = URL(fileURLWithPath: argument).deletingLastPathComponent()
            for _ in 0..<4 {
                candidates.append(directory.appendingPathComponent(name))
                directory = directory.deletingLastPathComponent()
            }
        }
        candidates.append(packageRoot.appendingPathComponent(".build/debug/\(name)"))
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        throw TestSetupError("\(name) executable not found next to the tests: run `swift build` first"
            + (override.map { " (or set \($0))" } ?? "") + "; looked in \(candidates.map(\.path))")
    }

    /// A Debian tool the test needs; a missing one fails the test with the package to install.
    public static func tool(_ path: String, package: String) throws -> URL {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestSetupError("\(path) is missing: install Debian's \(package) (scripts/setup.sh does)")
        }
        return URL(fileURLWithPath: path)
    }

    /// A new private temporary directory.
    public static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// A capture's bytes without its leading `#` comment lines (gpsd's `.log` headers).
public func captureBytes(_ url: URL) throws -> [UInt8] {
    let bytes = [UInt8](try Data(contentsOf: url))
    var index = 0
    while index < bytes.count, bytes[index] == UInt8(ascii: "#") {
        guard let newline = bytes[index...].firstIndex(of: 0x0A) else { return [] }
        index = newline + 1
    }
    return Array(bytes[index...])
}

/// How fast a test may run a simulated receiver's clock: `speed` scaled by `GNSSHAT_SPEED_SCALE`
/// (a fraction; default 1), at least 1. A simulator run `speed` times faster than real time needs a
/// machine that keeps up; under emulation (scripts/test-aarch64.sh) the same test runs slower.
public func simulatorSpeed(_ speed: Int) -> String {
    let scale = ProcessInfo.processInfo.environment["GNSSHAT_SPEED_SCALE"].flatMap(Double.init) ?? 1
    return String(max(1, Int((Double(speed) * min(max(scale, 0), 1)).rounded())))
}
