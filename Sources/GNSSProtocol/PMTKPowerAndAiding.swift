// MTK power save and aiding packets: `$PMTK225` (periodic and AlwaysLocate modes), `$PMTK740` (UTC
// time) and `$PMTK741` (reference position and time), each acknowledged by `$PMTK001,cmd,flag`.
//
// Formats from GlobalTop's "PMTK command packet" (Rev. A08, MT3339: `PMTK225,Type,First Run time,First
// Sleep time,Second run time,Second sleep time` in ms, example `$PMTK225,1,3000,12000,18000,72000*16`),
// Quectel's MC60 hardware design (the same, run and sleep times 1000-518,400,000 ms, the second pair 0
// or in that range) and the `$PMTK740,YYYY,MM,DD,hh,mm,ss` / `$PMTK741,Lat,Long,Alt,YYYY,MM,DD,hh,mm,ss`
// lines of the same GlobalTop document ("the accuracy of the location shall be better than 30km").
// Neither oracle knows these packets; TestVectorTests checks them against the documents' examples.
//
// A `PMTKMessage` keeps these packets as `.other(number:fields:)` (the simulator reads them that way);
// the types here are their typed views: `init?(_:)` reads one, `message` and `sentence` write it.

/// `$PMTK225`: the receiver's power mode, with its run and sleep times in the periodic modes.
public struct PMTKPeriodicMode: Hashable, Sendable {
    /// The `Type` field.
    public enum Mode: Int, Hashable, Sendable {
        /// Back to normal (full power) operation.
        case normal = 0
        /// Run, then backup for the sleep time (left by a command only while running).
        case periodicBackup = 1
        /// Run, then standby for the sleep time.
        case periodicStandby = 2
        /// Backup until a FORCE_ON pulse.
        case perpetualBackup = 4
        /// The receiver picks run and sleep times itself, sleeping in standby.
        case alwaysLocateStandby = 8
        /// The receiver picks run and sleep times itself, sleeping in backup.
        case alwaysLocateBackup = 9
    }

    /// The run and sleep times of the periodic modes, ms.
    public struct Times: Hashable, Sendable {
        /// Full power, then asleep.
        public var run: Int
        public var sleep: Int
        /// Used instead when acquisition failed during `run` (to collect ephemeris), or `nil` when the
        /// packet leaves them out.
        public var secondRun: Int?
        public var secondSleep: Int?

        public init(run: Int, sleep: Int, secondRun: Int? = nil, secondSleep: Int? = nil) {
            self.run = run
            self.sleep = sleep
            self.secondRun = secondRun
            self.secondSleep = secondSleep
        }
    }

    public static let number = 225

    public var mode: Mode
    /// The times, for ``Mode/periodicBackup`` and ``Mode/periodicStandby``.
    public var times: Times?

    public init(mode: Mode, times: Times? = nil) {
        self.mode = mode
        self.times = times
    }

    /// Periodic standby: `run` ms on, `sleep` ms in standby; after a failed acquisition, the second pair.
    public static func periodicStandby(run: Int, sleep: Int, secondRun: Int? = nil, secondSleep: Int? = nil)
        -> PMTKPeriodicMode
    {
        PMTKPeriodicMode(
            mode: .periodicStandby, times: Times(run: run, sleep: sleep, secondRun: secondRun, secondSleep: secondSleep)
        )
    }

    /// Reads a `$PMTK225` packet: the type alone, or with run and sleep times (and the second pair).
    public init?(_ message: PMTKMessage) {
        guard case .other(Self.number, let fields) = message, let first = fields.first,
            let value = Int(first), let mode = Mode(rawValue: value)
        else { return nil }
        let numbers = fields.dropFirst().map { $0.isEmpty ? nil : Int($0) }
        switch numbers.count {
        case 0:
            self.init(mode: mode)
        case 2, 4:
            guard let run = numbers[0], let sleep = numbers[1] else { return nil }
            var times = Times(run: run, sleep: sleep)
            if numbers.count == 4 {
                // An empty field is a pair left out; a field that is there must be a number.
                if !fields[3].isEmpty && numbers[2] == nil || !fields[4].isEmpty && numbers[3] == nil { return nil }
                times.secondRun = numbers[2]
                times.secondSleep = numbers[3]
            }
            self.init(mode: mode, times: times)
        default:
            return nil
        }
    }

    public var message: PMTKMessage {
        var fields = [String(mode.rawValue)]
        if let times {
            fields += [String(times.run), String(times.sleep)]
            if times.secondRun != nil || times.secondSleep != nil {
                fields += [times.secondRun.map { String($0) } ?? "", times.secondSleep.map { String($0) } ?? ""]
            }
        }
        return .other(number: Self.number, fields: fields)
    }

    public var sentence: [UInt8] { message.sentence() }
}

/// `$PMTK740,YYYY,MM,DD,hh,mm,ss`: the current UTC time, to whole seconds (no accuracy field).
public struct PMTKTimeAiding: Hashable, Sendable {
    public static let number = 740

    /// The time, whole seconds.
    public var time: GNSSTime

    /// `time` rounded to the nearest second (the packet carries whole seconds).
    public init(time: GNSSTime) {
        self.time = GNSSTime(
            nanosecondsSinceEpoch: floorDiv(time.nanosecondsSinceEpoch + 500_000_000, 1_000_000_000) * 1_000_000_000)
    }

    public init?(_ message: PMTKMessage) {
        guard case .other(Self.number, let fields) = message, fields.count == 6,
            let time = PMTKTimeAiding.time(fields[...])
        else { return nil }
        self.time = time
    }

    public var message: PMTKMessage { .other(number: Self.number, fields: PMTKTimeAiding.fields(time)) }
    public var sentence: [UInt8] { message.sentence() }

    /// `YYYY,MM,DD,hh,mm,ss` of `time` (whole seconds).
    static func fields(_ time: GNSSTime) -> [String] {
        let date = time.date
        let day = time.timeOfDay
        func two(_ value: Int) -> String {
            var bytes: [UInt8] = []
            ASCII.appendPadded(value, width: 2, to: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
        return [String(date.year), two(date.month), two(date.day), two(day.hour), two(day.minute), two(day.second)]
    }

    /// The instant of six fields `YYYY,MM,DD,hh,mm,ss`, when they are a valid date and time.
    static func time(_ fields: ArraySlice<String>) -> GNSSTime? {
        let numbers = fields.compactMap { Int($0) }
        guard numbers.count == 6, let date = GNSSDate(validYear: numbers[0], month: numbers[1], day: numbers[2]),
            (0..<24).contains(numbers[3]), (0..<60).contains(numbers[4]), (0..<60).contains(numbers[5])
        else { return nil }
        return GNSSTime(date: date, time: TimeOfDay(hour: numbers[3], minute: numbers[4], second: numbers[5]))
    }
}

/// `$PMTK741,Lat,Long,Alt,YYYY,MM,DD,hh,mm,ss`: a reference position (degrees, metres) and the UTC time.
/// The packet has no accuracy field; GlobalTop asks for a position better than 30 km.
public struct PMTKPositionAiding: Hashable, Sendable {
    public static let number = 741
    /// The accuracy GlobalTop asks a reference position to be better than, metres.
    public static let requiredAccuracy = 30_000.0

    /// Degrees (south and west negative), to 1e-6 degree (0.1 m) on the wire.
    public var latitude: Double
    public var longitude: Double
    /// Metres, to 0.1 m on the wire.
    public var altitude: Double
    /// The time, whole seconds.
    public var time: GNSSTime

    /// The values as they go on the wire: degrees to 1e-6, metres to 0.1, time to the nearest second.
    public init(latitude: Double, longitude: Double, altitude: Double, time: GNSSTime) {
        self.latitude = (latitude * 1e6).rounded() / 1e6
        self.longitude = (longitude * 1e6).rounded() / 1e6
        self.altitude = (altitude * 10).rounded() / 10
        self.time = PMTKTimeAiding(time: time).time
    }

    public init?(_ message: PMTKMessage) {
        guard case .other(Self.number, let fields) = message, fields.count == 9,
            let latitude = Double(fields[0]), let longitude = Double(fields[1]), let altitude = Double(fields[2]),
            (-90...90).contains(latitude), (-180...180).contains(longitude), altitude.isFinite,
            let time = PMTKTimeAiding.time(fields[3...])
        else { return nil }
        self.init(latitude: latitude, longitude: longitude, altitude: altitude, time: time)
    }

    public var message: PMTKMessage {
        .other(
            number: Self.number,
            fields: [
                ASCII.fixed(latitude, decimals: 6), ASCII.fixed(longitude, decimals: 6),
                ASCII.fixed(altitude, decimals: 1),
            ]
                + PMTKTimeAiding.fields(time))
    }

    public var sentence: [UInt8] { message.sentence() }
}

extension PMTKMessage {
    /// The `flag` of `$PMTK001`: what the receiver did with a packet.
    public enum AckFlag: Hashable, Sendable, CustomStringConvertible {
        /// 0: invalid packet.
        case invalid
        /// 1: unsupported packet type.
        case unsupported
        /// 2: valid packet, but the action failed.
        case failed
        /// 3: valid packet, action succeeded.
        case succeeded
        case other(Int)

        public init(_ flag: Int) {
            switch flag {
            case 0: self = .invalid
            case 1: self = .unsupported
            case 2: self = .failed
            case 3: self = .succeeded
            default: self = .other(flag)
            }
        }

        public var description: String {
            switch self {
            case .invalid: "invalid packet"
            case .unsupported: "unsupported packet"
            case .failed: "valid packet, action failed"
            case .succeeded: "succeeded"
            case .other(let flag): "flag \(flag)"
            }
        }
    }

    /// The command a `$PMTK001` acknowledges and what became of it; `nil` for other packets.
    public var acknowledgement: (command: Int, flag: AckFlag)? {
        guard case .ack(let command, let flag) = self else { return nil }
        return (command, AckFlag(flag))
    }
}
