// AidingState: the saved file round-trips; a flipped byte, a cut file, another format version, another
// receiver and an old file are each told apart, and none throws; the state directory's resolution.
import Foundation
import GNSSHat
import GNSSProtocol
import LinuxSystem
import Testing

@Suite("Aiding state file")
struct AidingStateTests {
    static let identity = AidingIdentity(
        softwareVersion: "ROM SPG 5.10 (7b202e)", hardwareVersion: "000A0000", uniqueID: [0xCF, 0xFB, 0x03, 0xD2, 0x59])
    static let saved = AidingState.SavedAt(
        wallClock: GNSSTime(nanosecondsSinceEpoch: 1_796_000_000_123_456_789), wallClockSynchronised: true,
        sinceBoot: .seconds(3_600) + .nanoseconds(5), bootID: "5f0c2b3e-8f5c-4a55-9c59-0a4f1e1e2d3c")
    static let state = AidingState(
        identity: identity, savedAt: saved,
        position: .init(latitude: 51.4779, longitude: -0.0015, altitude: 45.25, accuracy: 3.5),
        databaseRecords: [Array(0..<12) + [0xDE, 0xAD], (0..<164).map { UInt8(truncatingIfNeeded: $0 &* 11) }])

    /// The same boot, `seconds` after the save.
    static func later(_ seconds: Int64, sameBoot: Bool = true, synchronised: Bool = true) -> AidingClock {
        AidingClock(
            wallClock: GNSSTime(nanosecondsSinceEpoch: saved.wallClock.nanosecondsSinceEpoch + seconds * 1_000_000_000),
            wallClockSynchronised: synchronised,
            sinceBoot: sameBoot ? saved.sinceBoot + .seconds(seconds) : .seconds(20),
            bootID: sameBoot ? saved.bootID : "another-boot")
    }

    static func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-aiding-\(UUID())").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("encode and decode give the same state, with and without the optional parts")
    func roundTrip() throws {
        #expect(try AidingState.decode(Self.state.encoded).get() == Self.state)
        var bare = Self.state
        bare.position = nil
        bare.identity.uniqueID = nil
        bare.savedAt.bootID = nil
        bare.databaseRecords = []
        #expect(try AidingState.decode(bare.encoded).get() == bare)
    }

    @Test("saved in a directory it creates, loaded back as usable")
    func saveAndLoad() throws {
        let parent = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let directory = parent + "/gnss-hat"
        #expect(AidingState.load(from: directory, receiver: Self.identity, now: Self.later(60)) == .missing)
        try Self.state.save(in: directory)
        #expect(AidingState.load(from: directory, receiver: Self.identity, now: Self.later(60)) == .usable(Self.state))
        #expect(AidingState.load(from: directory, receiver: nil, now: Self.later(60)).state == Self.state)
        try AidingState.remove(in: directory)
        #expect(AidingState.load(from: directory, receiver: Self.identity, now: Self.later(60)) == .missing)
    }

    @Test("every flipped byte and every cut is corrupt, never a different state", arguments: [0, 8, 9, 40, -5, -1])
    func corrupt(offset: Int) throws {
        var bytes = Self.state.encoded
        let index = offset >= 0 ? offset : bytes.count + offset
        bytes[index] ^= 0x20
        let failure = try #require(AidingState.decode(bytes).failureReason)
        #expect(["not an aiding state file", "checksum mismatch"].contains(failure) || failure.hasPrefix("format"))
    }

    @Test("all single-byte flips and all truncations are caught")
    func exhaustive() {
        let bytes = Self.state.encoded
        for index in bytes.indices {
            var damaged = bytes
            damaged[index] ^= 0x01
            #expect(AidingState.decode(damaged).failureReason != nil, "flip at \(index)")
        }
        for length in 0..<bytes.count {
            #expect(AidingState.decode(Array(bytes.prefix(length))).failureReason != nil, "cut at \(length)")
        }
    }

    @Test("load: a corrupt file is an outcome; so is another version; neither throws")
    func corruptFile() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var bytes = Self.state.encoded
        bytes[bytes.count / 2] ^= 0xFF
        try FileSystem.replaceAtomically(directory + "/" + AidingState.fileName, with: bytes)
        #expect(
            AidingState.load(from: directory, receiver: Self.identity, now: Self.later(1))
                == .corrupt("checksum mismatch"))

        var version = Self.state.encoded
        version[8] = 2
        try FileSystem.replaceAtomically(directory + "/" + AidingState.fileName, with: version)
        #expect(
            AidingState.load(from: directory, receiver: Self.identity, now: Self.later(1))
                == .corrupt("format version 2, this program reads 1"))
    }

    @Test("another receiver's or firmware's file is foreign")
    func foreign() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.state.save(in: directory)
        var other = Self.identity
        other.uniqueID = [1, 2, 3, 4, 5]
        #expect(AidingState.load(from: directory, receiver: other, now: Self.later(1)) == .foreign(Self.identity))
        other = Self.identity
        other.softwareVersion = "ROM SPG 5.00"
        #expect(AidingState.load(from: directory, receiver: other, now: Self.later(1)) == .foreign(Self.identity))
        other = Self.identity
        other.uniqueID = nil
        #expect(AidingState.load(from: directory, receiver: other, now: Self.later(1)).state != nil)
    }

    @Test("age: exact in one boot, by the wall clock only when both ends were synchronised; old is stale")
    func stale() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.state.save(in: directory)
        #expect(Self.state.age(now: Self.later(90)) == .seconds(90))
        #expect(Self.state.age(now: Self.later(90, sameBoot: false)) == .seconds(90))
        #expect(Self.state.age(now: Self.later(90, sameBoot: false, synchronised: false)) == nil)
        #expect(Self.state.age(now: Self.later(-90, sameBoot: false)) == nil, "a clock set back")
        let day = Int64(24 * 3600)
        #expect(AidingState.load(from: directory, receiver: Self.identity, now: Self.later(day)).state != nil)
        #expect(
            AidingState.load(from: directory, receiver: Self.identity, now: Self.later(day + 1))
                == .stale(age: .seconds(day + 1)))
        #expect(
            AidingState.load(
                from: directory, receiver: Self.identity, now: Self.later(5, sameBoot: false, synchronised: false))
                == .stale(age: nil))
        #expect(
            AidingState.load(from: directory, receiver: Self.identity, now: Self.later(600), maximumAge: .seconds(599))
                == .stale(age: .seconds(600)))
    }

    @Test("an unreadable file is an outcome naming the call")
    func unreadable() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A directory where the file should be: open succeeds, read fails with EISDIR.
        try FileManager.default.createDirectory(
            atPath: directory + "/" + AidingState.fileName, withIntermediateDirectories: false)
        let outcome = AidingState.load(from: directory, receiver: Self.identity, now: Self.later(1))
        let error = try #require(outcome.unreadableError)
        #expect(error.failure.errno == Errno(rawValue: EISDIR))
    }

    @Test(
        "state directory: option, systemd, root, XDG, home",
        arguments: [
            ("/srv/state", [:], false, "/srv/state"),
            (nil, ["STATE_DIRECTORY": "/var/lib/gnss-hat:/var/lib/other"], true, "/var/lib/gnss-hat"),
            (nil, ["XDG_STATE_HOME": "/home/pi/.state", "HOME": "/home/pi"], true, "/var/lib/gnss-hat"),
            (nil, ["XDG_STATE_HOME": "/home/pi/.state", "HOME": "/home/pi"], false, "/home/pi/.state/gnss-hat"),
            (nil, ["XDG_STATE_HOME": "relative", "HOME": "/home/pi"], false, "/home/pi/.local/state/gnss-hat"),
            ("", ["XDG_STATE_HOME": "", "HOME": "/home/pi"], false, "/home/pi/.local/state/gnss-hat"),
            (nil, [:], false, nil),
        ] as [(String?, [String: String], Bool, String?)])
    func directoryResolution(option: String?, environment: [String: String], root: Bool, expected: String?) {
        #expect(aidingStateDirectory(option: option, isRoot: root, environment: { environment[$0] }) == expected)
    }
}

extension Result where Failure == AidingStateBytes.Failure {
    var failureReason: String? {
        if case .failure(let failure) = self { failure.reason } else { nil }
    }
}

extension AidingStateLoad {
    var unreadableError: FileError? {
        if case .unreadable(let error) = self { error } else { nil }
    }
}
