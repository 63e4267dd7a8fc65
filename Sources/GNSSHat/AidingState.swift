// What a receiver loses when its supply is cut with no backup battery, saved so that the next power-on
// can give it back: its navigation database (UBX-MGA-DBD records), its last position with accuracy and
// the time they were saved, tied to the receiver they came from (MON-VER strings, SEC-UNIQID).
//
// The file is a small versioned binary: "GNSSHATA", a format version, the fields, and a CRC-32 of all
// that comes before it. Reading never throws into the power-on path: `load` says what it found.
public import GNSSProtocol
public import LinuxSystem

/// Which receiver a saved state belongs to: a database is only for the firmware (and chip) that wrote it.
public struct AidingIdentity: Hashable, Sendable, CustomStringConvertible {
    /// MON-VER's `swVersion` and `hwVersion`.
    public var softwareVersion: String
    public var hardwareVersion: String
    /// SEC-UNIQID's id, when the receiver answered the poll (u-blox M8 from protocol 18 on, 9 and M10).
    public var uniqueID: [UInt8]?

    public init(softwareVersion: String, hardwareVersion: String, uniqueID: [UInt8]? = nil) {
        self.softwareVersion = softwareVersion
        self.hardwareVersion = hardwareVersion
        self.uniqueID = uniqueID
    }

    /// Whether `other` is the same receiver: the same versions, and the same unique id when both know one.
    public func matches(_ other: AidingIdentity) -> Bool {
        guard softwareVersion == other.softwareVersion, hardwareVersion == other.hardwareVersion else { return false }
        if let mine = uniqueID, let theirs = other.uniqueID { return mine == theirs }
        return true
    }

    public var description: String {
        let id = uniqueID.map { " id " + UBXSecUniqID(version: 0, uniqueID: $0).hex } ?? ""
        return "\(softwareVersion) / \(hardwareVersion)\(id)"
    }
}

/// A saved state: see the file's header.
public struct AidingState: Hashable, Sendable {
    /// A position the receiver had, with its horizontal accuracy, in WGS84.
    public struct Position: Hashable, Sendable {
        /// Degrees.
        public var latitude: Double
        public var longitude: Double
        /// Metres above the ellipsoid.
        public var altitude: Double
        /// Horizontal accuracy (1 sigma), metres.
        public var accuracy: Double

        public init(latitude: Double, longitude: Double, altitude: Double, accuracy: Double) {
            self.latitude = latitude
            self.longitude = longitude
            self.altitude = altitude
            self.accuracy = accuracy
        }
    }

    /// When the state was saved, on the two clocks of ``AidingClock``: the wall clock (UTC; meaningful
    /// across boots only when the system clock was synchronised) and the boot clock with the boot's id
    /// (exact within one boot).
    public typealias SavedAt = AidingClock

    /// The file format's version: a file of another version is ``AidingStateLoad/corrupt(_:)``.
    public static let formatVersion: UInt16 = 1
    /// The file's name in the state directory.
    public static let fileName = "aiding.state"

    public var identity: AidingIdentity
    public var savedAt: SavedAt
    public var position: Position?
    /// The MGA-DBD payloads, in the order the receiver sent them.
    public var databaseRecords: [[UInt8]]

    public init(identity: AidingIdentity, savedAt: SavedAt, position: Position?, databaseRecords: [[UInt8]]) {
        self.identity = identity
        self.savedAt = savedAt
        self.position = position
        self.databaseRecords = databaseRecords
    }
}

/// What ``AidingState/load(from:receiver:now:maximumAge:)`` found; none of these stops a power-on.
public enum AidingStateLoad: Equatable, Sendable, CustomStringConvertible {
    /// A state for this receiver, younger than the maximum age.
    case usable(AidingState)
    /// No file (the first power-on, or a board that keeps its backup RAM).
    case missing
    /// The file is there but cannot be trusted: bad magic, version, checksum or length.
    case corrupt(String)
    /// The file belongs to another receiver (or firmware).
    case foreign(AidingIdentity)
    /// The file is older than the maximum age, or its age cannot be known (see ``AidingState/age(now:)``).
    case stale(age: Duration?)
    /// The file could not be read.
    case unreadable(FileError)

    public var state: AidingState? {
        if case .usable(let state) = self { state } else { nil }
    }

    public var description: String {
        switch self {
        case .usable(let state):
            "usable (\(state.databaseRecords.count) database records, position \(state.position == nil ? "no" : "yes"))"
        case .missing: "missing"
        case .corrupt(let reason): "corrupt: \(reason)"
        case .foreign(let identity): "saved by another receiver (\(identity))"
        case .stale(let age): "stale (age \(age.map { "\($0)" } ?? "unknown"))"
        case .unreadable(let error): "unreadable: \(error)"
        }
    }
}

/// An instant on two clocks, for a state's save and its use: the wall clock (UTC) with whether the system
/// clock was synchronised, and `CLOCK_BOOTTIME` with the boot's id (`/proc/sys/kernel/random/boot_id`).
public struct AidingClock: Hashable, Sendable {
    public var wallClock: GNSSTime
    public var wallClockSynchronised: Bool
    public var sinceBoot: Duration
    public var bootID: String?

    public init(wallClock: GNSSTime, wallClockSynchronised: Bool, sinceBoot: Duration, bootID: String?) {
        self.wallClock = wallClock
        self.wallClockSynchronised = wallClockSynchronised
        self.sinceBoot = sinceBoot
        self.bootID = bootID
    }

    /// Now, from the system: `clock_gettime(CLOCK_REALTIME)`, `adjtimex`, `CLOCK_BOOTTIME` and the boot id.
    public static func system() -> AidingClock {
        AidingClock(
            wallClock: GNSSTime(nanosecondsSinceEpoch: WallClock.now()),
            wallClockSynchronised: SystemClock.synchronisation().isSynchronised, sinceBoot: SystemClock.sinceBoot(),
            bootID: SystemClock.bootID())
    }
}

/// Where the aiding reads the wall clock, and whether it may be sent to a receiver: the system's
/// (`adjtimex` says whether a time daemon keeps it synchronised), or one marked synchronised.
public struct AidingTimeSource: Sendable {
    /// The wall clock now, and its maximum error when it is synchronised (nil: not synchronised, the
    /// time is not sent).
    public let read: @Sendable () -> (clock: AidingClock, maximumError: Duration?)

    public init(read: @escaping @Sendable () -> (clock: AidingClock, maximumError: Duration?)) {
        self.read = read
    }

    /// The system's clock, as the kernel's clock discipline reports it.
    public static let system = AidingTimeSource {
        let synchronisation = SystemClock.synchronisation()
        return (AidingClock.system(), synchronisation.maximumError)
    }

    /// The system's time, taken as synchronised to within `maximumError`: a simulation or a benchmark
    /// of a Pi whose clock NTP keeps, on a machine whose own clock may not be disciplined.
    public static func synchronised(maximumError: Duration = .milliseconds(50)) -> AidingTimeSource {
        AidingTimeSource {
            var clock = AidingClock.system()
            clock.wallClockSynchronised = true
            return (clock, maximumError)
        }
    }
}

extension AidingState {
    /// The default maximum age: ephemerides last about 4 h, but the almanac and the position in the
    /// database help for days; the receiver itself drops what has expired, so a day is generous and safe.
    public static let defaultMaximumAge = Duration.seconds(24 * 3600)

    /// How long ago the state was saved: exact within one boot (the boot clock), across boots only when
    /// the wall clock was synchronised both at the save and now; otherwise unknown (nil). A negative
    /// age (a clock set back) is unknown too.
    public func age(now: AidingClock) -> Duration? {
        if let bootID = savedAt.bootID, bootID == now.bootID {
            let age = now.sinceBoot - savedAt.sinceBoot
            return age >= .zero ? age : nil
        }
        guard savedAt.wallClockSynchronised, now.wallClockSynchronised else { return nil }
        let nanoseconds = now.wallClock.nanosecondsSinceEpoch - savedAt.wallClock.nanosecondsSinceEpoch
        return nanoseconds >= 0 ? .nanoseconds(nanoseconds) : nil
    }

    /// The file's bytes: magic, version, fields, CRC-32.
    public var encoded: [UInt8] {
        var out = AidingStateBytes.Writer()
        out.bytes(AidingStateBytes.magic)
        out.u16(Self.formatVersion)
        out.string(identity.softwareVersion)
        out.string(identity.hardwareVersion)
        out.optionalBytes(identity.uniqueID)
        out.i64(savedAt.wallClock.nanosecondsSinceEpoch)
        out.u8(savedAt.wallClockSynchronised ? 1 : 0)
        let (seconds, attoseconds) = savedAt.sinceBoot.components
        out.i64(seconds)
        out.i64(attoseconds)
        out.optionalBytes(savedAt.bootID.map { Array($0.utf8) })
        if let position {
            out.u8(1)
            for value in [position.latitude, position.longitude, position.altitude, position.accuracy] {
                out.u64(value.bitPattern)
            }
        } else {
            out.u8(0)
        }
        out.u32(UInt32(databaseRecords.count))
        for record in databaseRecords { out.lengthPrefixed(record) }
        out.u32(CRC32.checksum(out.data[...]))
        return out.data
    }

    /// Reads a file's bytes; the reason when they are not a state of this format.
    public static func decode(_ bytes: [UInt8]) -> Result<AidingState, AidingStateBytes.Failure> {
        guard bytes.count >= AidingStateBytes.magic.count + 2 + 4 else { return .failure(.init("truncated")) }
        guard Array(bytes.prefix(AidingStateBytes.magic.count)) == AidingStateBytes.magic else {
            return .failure(.init("not an aiding state file"))
        }
        var reader = AidingStateBytes.Reader(bytes[AidingStateBytes.magic.count...])
        do throws(AidingStateBytes.Failure) {
            let version = try reader.u16()
            guard version == formatVersion else {
                return .failure(.init("format version \(version), this program reads \(formatVersion)"))
            }
            let body = bytes[..<(bytes.count - 4)]
            var crc = AidingStateBytes.Reader(bytes[(bytes.count - 4)...])
            guard try crc.u32() == CRC32.checksum(body) else { return .failure(.init("checksum mismatch")) }
            reader = AidingStateBytes.Reader(body.dropFirst(AidingStateBytes.magic.count + 2))
            let identity = AidingIdentity(
                softwareVersion: try reader.string(), hardwareVersion: try reader.string(),
                uniqueID: try reader.optionalBytes())
            let wall = GNSSTime(nanosecondsSinceEpoch: try reader.i64())
            let synchronised = try reader.u8() != 0
            let sinceBoot = Duration(secondsComponent: try reader.i64(), attosecondsComponent: try reader.i64())
            let bootID = try reader.optionalBytes().map { String(decoding: $0, as: UTF8.self) }
            var position: Position?
            if try reader.u8() != 0 {
                let values = [try reader.u64(), try reader.u64(), try reader.u64(), try reader.u64()]
                    .map(Double.init(bitPattern:))
                position = Position(latitude: values[0], longitude: values[1], altitude: values[2], accuracy: values[3])
            }
            let count = Int(try reader.u32())
            guard count <= reader.remaining else { throw AidingStateBytes.Failure("record count \(count) too large") }
            var records: [[UInt8]] = []
            records.reserveCapacity(count)
            for _ in 0..<count { records.append(try reader.lengthPrefixed()) }
            guard reader.remaining == 0 else { throw AidingStateBytes.Failure("\(reader.remaining) bytes left over") }
            return .success(
                AidingState(
                    identity: identity,
                    savedAt: SavedAt(
                        wallClock: wall, wallClockSynchronised: synchronised, sinceBoot: sinceBoot, bootID: bootID),
                    position: position, databaseRecords: records))
        } catch {
            return .failure(error)
        }
    }

    /// Writes the state to ``fileName`` in `directory`, creating the directory (not its parents) when it is
    /// missing, atomically (``LinuxSystem/FileSystem/replaceAtomically(_:with:permissions:)``).
    public func save(in directory: String) throws(FileError) {
        try FileSystem.createDirectory(directory)
        try FileSystem.replaceAtomically(directory + "/" + Self.fileName, with: encoded)
    }

    /// Reads the state in `directory` and says whether it can be used for `receiver` (when known: with nil
    /// the caller checks the identity itself) at `now`. Never throws: every failure is an outcome.
    public static func load(
        from directory: String, receiver: AidingIdentity?, now: AidingClock, maximumAge: Duration = defaultMaximumAge
    ) -> AidingStateLoad {
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.contents(of: directory + "/" + fileName)
        } catch {
            return error.failure.errno == .noSuchFileOrDirectory ? .missing : .unreadable(error)
        }
        let state: AidingState
        switch decode(bytes) {
        case .success(let decoded): state = decoded
        case .failure(let failure): return .corrupt(failure.reason)
        }
        if let receiver, !state.identity.matches(receiver) { return .foreign(state.identity) }
        guard let age = state.age(now: now), age <= maximumAge else { return .stale(age: state.age(now: now)) }
        return .usable(state)
    }

    /// Removes the saved state (after a restore used it, or when it was found corrupt); a missing file is fine.
    public static func remove(in directory: String) throws(FileError) {
        try FileSystem.removeFile(directory + "/" + fileName)
    }
}

/// Where the state directory is: the first of `--state-dir`, systemd's `$STATE_DIRECTORY` (the unit's
/// `StateDirectory=gnss-hat`), `/var/lib/gnss-hat` for root, `$XDG_STATE_HOME/gnss-hat`, and
/// `$HOME/.local/state/gnss-hat`; nil when none applies (no home). A pure function of its inputs.
public func aidingStateDirectory(option: String?, isRoot: Bool, environment: (String) -> String?) -> String? {
    func nonEmpty(_ value: String?) -> String? { value.flatMap { $0.isEmpty ? nil : $0 } }
    if let option = nonEmpty(option) { return option }
    // systemd lists several directories separated by colons when the unit names several; ours names one.
    if let systemd = nonEmpty(environment("STATE_DIRECTORY")) {
        return String(decoding: Array(systemd.utf8).split(separator: UInt8(ascii: ":")).first ?? [], as: UTF8.self)
    }
    if isRoot { return "/var/lib/gnss-hat" }
    // The XDG base directory specification ignores a relative path.
    if let xdg = nonEmpty(environment("XDG_STATE_HOME")), xdg.hasPrefix("/") { return xdg + "/gnss-hat" }
    if let home = nonEmpty(environment("HOME")) { return home + "/.local/state/gnss-hat" }
    return nil
}

/// The byte layout's little-endian writer and bounds-checked reader.
public enum AidingStateBytes {
    static let magic = Array("GNSSHATA".utf8)

    /// Why bytes are not a state file.
    public struct Failure: Error, Hashable, Sendable {
        public var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    struct Writer {
        var data: [UInt8] = []
        mutating func bytes(_ value: [UInt8]) { data += value }
        mutating func u8(_ value: UInt8) { data.append(value) }
        mutating func u16(_ value: UInt16) { unsigned(UInt64(value), 2) }
        mutating func u32(_ value: UInt32) { unsigned(UInt64(value), 4) }
        mutating func u64(_ value: UInt64) { unsigned(value, 8) }
        mutating func i64(_ value: Int64) { unsigned(UInt64(bitPattern: value), 8) }
        mutating func unsigned(_ value: UInt64, _ size: Int) {
            for index in 0..<size { data.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * index))) }
        }
        mutating func lengthPrefixed(_ value: [UInt8]) {
            u32(UInt32(value.count))
            data += value
        }
        mutating func string(_ value: String) { lengthPrefixed(Array(value.utf8)) }
        mutating func optionalBytes(_ value: [UInt8]?) {
            if let value {
                u8(1)
                lengthPrefixed(value)
            } else {
                u8(0)
            }
        }
    }

    struct Reader {
        var bytes: ArraySlice<UInt8>
        init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }
        var remaining: Int { bytes.count }

        mutating func take(_ count: Int) throws(Failure) -> ArraySlice<UInt8> {
            guard count >= 0, count <= bytes.count else { throw Failure("truncated") }
            let taken = bytes.prefix(count)
            bytes = bytes.dropFirst(count)
            return taken
        }
        mutating func unsigned(_ size: Int) throws(Failure) -> UInt64 {
            var value: UInt64 = 0
            for (index, byte) in try take(size).enumerated() { value |= UInt64(byte) << UInt64(8 * index) }
            return value
        }
        mutating func u8() throws(Failure) -> UInt8 { UInt8(try unsigned(1)) }
        mutating func u16() throws(Failure) -> UInt16 { UInt16(try unsigned(2)) }
        mutating func u32() throws(Failure) -> UInt32 { UInt32(try unsigned(4)) }
        mutating func u64() throws(Failure) -> UInt64 { try unsigned(8) }
        mutating func i64() throws(Failure) -> Int64 { Int64(bitPattern: try unsigned(8)) }
        mutating func lengthPrefixed() throws(Failure) -> [UInt8] { Array(try take(Int(try u32()))) }
        mutating func string() throws(Failure) -> String { String(decoding: try lengthPrefixed(), as: UTF8.self) }
        mutating func optionalBytes() throws(Failure) -> [UInt8]? {
            switch try u8() {
            case 0: return nil
            case 1: return try lengthPrefixed()
            case let flag: throw Failure("bad presence flag \(flag)")
            }
        }
    }
}
