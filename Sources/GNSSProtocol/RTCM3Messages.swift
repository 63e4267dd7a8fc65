// The RTCM 3 messages a rover needs to start RTK, encoded and read back: the reference station's
// antenna reference point (1005, 1006 with its antenna height) and the header and satellites of the
// Multiple Signal Messages (MSM4 encoded; the header read for MSM1-7). Field numbers (DFnnn) are RTCM
// 10403.3's; pyrtcm decodes what these encode (Tests/GNSSProtocolTests/RTCM3Tests.swift).

/// RTCM 1005 (stationary RTK reference station ARP) and 1006 (the same with the antenna height).
public struct RTCM3StationARP: Hashable, Sendable {
    /// DF003: the reference station id (0-4095).
    public var stationID: Int
    /// DF025-DF027: the antenna reference point, ECEF metres (0.1 mm resolution).
    public var x: Double
    public var y: Double
    public var z: Double
    /// DF028 (1006 only): the antenna height above the marker, metres; nil: a 1005.
    public var antennaHeight: Double?
    /// DF022-DF024: the systems the station serves.
    public var gps: Bool
    public var glonass: Bool
    public var galileo: Bool
    /// DF021: the ITRF realisation year (0: not given).
    public var itrfYear: Int

    public init(
        stationID: Int, x: Double, y: Double, z: Double, antennaHeight: Double? = nil, gps: Bool = true,
        glonass: Bool = false, galileo: Bool = true, itrfYear: Int = 0
    ) {
        self.stationID = stationID
        self.x = x
        self.y = y
        self.z = z
        self.antennaHeight = antennaHeight
        self.gps = gps
        self.glonass = glonass
        self.galileo = galileo
        self.itrfYear = itrfYear
    }

    /// The message number: 1006 with an antenna height, 1005 without.
    public var messageNumber: Int { antennaHeight == nil ? 1005 : 1006 }

    /// The payload (19 bytes for 1005, 21 for 1006).
    public var payload: [UInt8] {
        var w = RTCM3BitWriter()
        w.unsigned(UInt64(messageNumber), width: 12)
        w.unsigned(UInt64(clamping: stationID), width: 12)
        w.unsigned(UInt64(clamping: itrfYear), width: 6)
        w.bit(gps)
        w.bit(glonass)
        w.bit(galileo)
        w.bit(false)  // DF141: a physical reference station
        w.signed(Self.tenthsOfMillimetre(x), width: 38)
        w.bit(false)  // DF142: single receiver oscillator
        w.bit(false)  // DF001: reserved
        w.signed(Self.tenthsOfMillimetre(y), width: 38)
        w.unsigned(0, width: 2)  // DF364: quarter cycle indicator
        w.signed(Self.tenthsOfMillimetre(z), width: 38)
        if let antennaHeight {
            w.unsigned(UInt64(clamping: Self.tenthsOfMillimetre(antennaHeight)), width: 16)
        }
        return w.bytes
    }

    /// The whole frame: preamble, length, payload, CRC-24Q.
    public var frame: [UInt8] { RTCM3Frame.frame(payload: payload) }

    /// Reads a 1005 or 1006 frame; nil for any other message or a payload too short.
    public init?(_ frame: RTCM3Frame) {
        var r = RTCM3BitReader(frame.payload)
        guard let number = r.unsigned(width: 12), number == 1005 || number == 1006,
            let station = r.unsigned(width: 12), let year = r.unsigned(width: 6),
            let systems = r.unsigned(width: 4), let x = r.signed(width: 38), r.skip(2),
            let y = r.signed(width: 38), r.skip(2), let z = r.signed(width: 38)
        else { return nil }
        var height: Double?
        if number == 1006 {
            guard let raw = r.unsigned(width: 16) else { return nil }
            height = Double(raw) * 1e-4
        }
        self.init(
            stationID: Int(station), x: Double(x) * 1e-4, y: Double(y) * 1e-4, z: Double(z) * 1e-4,
            antennaHeight: height, gps: systems & 0x8 != 0, glonass: systems & 0x4 != 0, galileo: systems & 0x2 != 0,
            itrfYear: Int(year))
    }

    private static func tenthsOfMillimetre(_ metres: Double) -> Int64 {
        Int64(clamping: Int((metres * 1e4).rounded()))
    }
}

/// The header of a Multiple Signal Message (MSM1-7: 1071-1127, 1131-1137), and an MSM4's
/// observations: per satellite its rough range, per cell its fine pseudorange and phase range, lock
/// time, half-cycle flag and carrier-to-noise ratio.
public struct RTCM3MSM: Hashable, Sendable {
    /// The satellite system of an MSM message number.
    public static func system(messageNumber: Int) -> GNSSSystem? {
        switch messageNumber {
        case 1071...1077: .gps
        case 1081...1087: .glonass
        case 1091...1097: .galileo
        case 1101...1107: .sbas
        case 1111...1117: .qzss
        case 1121...1127: .beidou
        case 1131...1137: .navic
        default: nil
        }
    }

    /// One satellite's observations of one signal (a cell).
    public struct Cell: Hashable, Sendable {
        /// The satellite (1-64, DF394's numbering) and the signal (1-32, DF395's).
        public var satellite: Int
        public var signal: Int
        /// DF400 fine pseudorange and DF401 fine phase range, in 2^-24 and 2^-29 ms.
        public var finePseudorange: Int
        public var finePhaseRange: Int
        /// DF402 lock time indicator (0-15); DF420 half-cycle ambiguity; DF403 C/N0, dBHz.
        public var lockTime: Int
        public var halfCycle: Bool
        public var carrierToNoise: Int

        public init(satellite: Int, signal: Int, finePseudorange: Int = 0, finePhaseRange: Int = 0,
                    lockTime: Int = 15, halfCycle: Bool = false, carrierToNoise: Int = 45) {
            self.satellite = satellite
            self.signal = signal
            self.finePseudorange = finePseudorange
            self.finePhaseRange = finePhaseRange
            self.lockTime = lockTime
            self.halfCycle = halfCycle
            self.carrierToNoise = carrierToNoise
        }
    }

    /// DF002: 1074 GPS MSM4, 1084 GLONASS, 1094 Galileo, 1124 BeiDou, ...
    public var messageNumber: Int
    /// DF003.
    public var stationID: Int
    /// The epoch time field (30 bits): GPS and Galileo time of week in ms (DF004, DF248); BeiDou's
    /// (DF427); GLONASS day of week and time of day (DF416, DF034) as sent.
    public var epochTime: UInt32
    /// DF393: more MSMs of this epoch follow.
    public var multipleMessage: Bool
    /// The satellites (1-64) and signals (1-32) present, ascending.
    public var satellites: [Int]
    public var signals: [Int]
    /// The cells present, in DF396's order (by satellite, then signal). Empty when read from an MSM
    /// other than MSM4 (its header only is read).
    public var cells: [Cell]
    /// DF397/DF398 per satellite: the rough range, whole ms and 2^-10 ms (MSM4 only).
    public var roughRanges: [(milliseconds: Int, fraction: Int)] {
        get { zip(roughMilliseconds, roughFractions).map { ($0, $1) } }
        set {
            roughMilliseconds = newValue.map(\.milliseconds)
            roughFractions = newValue.map(\.fraction)
        }
    }
    private var roughMilliseconds: [Int]
    private var roughFractions: [Int]

    /// An MSM4 of `cells` (each satellite's rough range 70 ms unless given).
    public init(
        messageNumber: Int, stationID: Int, epochTime: UInt32, cells: [Cell], multipleMessage: Bool = false,
        roughRanges: [(milliseconds: Int, fraction: Int)]? = nil
    ) {
        self.messageNumber = messageNumber
        self.stationID = stationID
        self.epochTime = epochTime & 0x3FFF_FFFF
        self.multipleMessage = multipleMessage
        let satellites = Array(Set(cells.map(\.satellite).filter { (1...64).contains($0) })).sorted()
        let signals = Array(Set(cells.map(\.signal).filter { (1...32).contains($0) })).sorted()
        self.satellites = satellites
        self.signals = signals
        self.cells = cells.filter { satellites.contains($0.satellite) && signals.contains($0.signal) }
            .sorted { ($0.satellite, $0.signal) < ($1.satellite, $1.signal) }
        let rough = roughRanges ?? Array(repeating: (70, 0), count: satellites.count)
        roughMilliseconds = satellites.indices.map { $0 < rough.count ? rough[$0].milliseconds : 70 }
        roughFractions = satellites.indices.map { $0 < rough.count ? rough[$0].fraction : 0 }
    }

    public static func == (lhs: RTCM3MSM, rhs: RTCM3MSM) -> Bool {
        lhs.messageNumber == rhs.messageNumber && lhs.stationID == rhs.stationID && lhs.epochTime == rhs.epochTime
            && lhs.multipleMessage == rhs.multipleMessage && lhs.satellites == rhs.satellites
            && lhs.signals == rhs.signals && lhs.cells == rhs.cells && lhs.roughMilliseconds == rhs.roughMilliseconds
            && lhs.roughFractions == rhs.roughFractions
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(messageNumber)
        hasher.combine(stationID)
        hasher.combine(epochTime)
        hasher.combine(cells)
    }

    /// The MSM4 payload: header (169 bits and the cell mask), satellite data, signal data.
    public var payload: [UInt8] {
        var w = RTCM3BitWriter()
        w.unsigned(UInt64(clamping: messageNumber), width: 12)
        w.unsigned(UInt64(clamping: stationID), width: 12)
        w.unsigned(UInt64(epochTime), width: 30)
        w.bit(multipleMessage)
        w.unsigned(0, width: 3)  // DF409 IODS
        w.unsigned(0, width: 7)  // DF001 reserved
        w.unsigned(0, width: 2)  // DF411 clock steering
        w.unsigned(0, width: 2)  // DF412 external clock
        w.bit(false)  // DF417 divergence-free smoothing
        w.unsigned(0, width: 3)  // DF418 smoothing interval
        for satellite in 1...64 { w.bit(satellites.contains(satellite)) }
        for signal in 1...32 { w.bit(signals.contains(signal)) }
        for satellite in satellites {
            for signal in signals { w.bit(cells.contains { $0.satellite == satellite && $0.signal == signal }) }
        }
        for milliseconds in roughMilliseconds { w.unsigned(UInt64(clamping: milliseconds), width: 8) }
        for fraction in roughFractions { w.unsigned(UInt64(clamping: fraction), width: 10) }
        for cell in cells { w.signed(Int64(cell.finePseudorange), width: 15) }
        for cell in cells { w.signed(Int64(cell.finePhaseRange), width: 22) }
        for cell in cells { w.unsigned(UInt64(clamping: cell.lockTime), width: 4) }
        for cell in cells { w.bit(cell.halfCycle) }
        for cell in cells { w.unsigned(UInt64(clamping: cell.carrierToNoise), width: 6) }
        return w.bytes
    }

    /// The whole frame: preamble, length, payload, CRC-24Q.
    public var frame: [UInt8] { RTCM3Frame.frame(payload: payload) }

    /// Reads an MSM frame's header (any of MSM1-7) and, for an MSM4, its observations; nil for any
    /// other message or a frame too short for what its masks promise.
    public init?(_ frame: RTCM3Frame) {
        var r = RTCM3BitReader(frame.payload)
        guard let number = r.unsigned(width: 12), Self.system(messageNumber: Int(number)) != nil,
            let station = r.unsigned(width: 12), let epoch = r.unsigned(width: 30), let multiple = r.unsigned(width: 1),
            r.skip(3 + 7 + 2 + 2 + 1 + 3), let satelliteMask = r.unsigned(width: 64),
            let signalMask = r.unsigned(width: 32)
        else { return nil }
        let satellites = (1...64).filter { satelliteMask >> UInt64(64 - $0) & 1 == 1 }
        let signals = (1...32).filter { signalMask >> UInt64(32 - $0) & 1 == 1 }
        var present: [(Int, Int)] = []
        for satellite in satellites {
            for signal in signals {
                guard let bit = r.unsigned(width: 1) else { return nil }
                if bit == 1 { present.append((satellite, signal)) }
            }
        }
        var cells: [Cell] = []
        var rough: [(milliseconds: Int, fraction: Int)] = []
        if Int(number) % 10 == 4 {
            guard let read = Self.readMSM4(&r, satellites: satellites.count, present: present) else { return nil }
            (cells, rough) = read
        }
        self.init(messageNumber: Int(number), stationID: Int(station), epochTime: UInt32(epoch), cells: cells,
                  multipleMessage: multiple == 1, roughRanges: rough.isEmpty ? nil : rough)
        self.satellites = satellites
        self.signals = signals
    }

    private static func readMSM4(
        _ r: inout RTCM3BitReader, satellites: Int, present: [(Int, Int)]
    ) -> (cells: [Cell], rough: [(milliseconds: Int, fraction: Int)])? {
        var milliseconds: [Int] = []
        var fractions: [Int] = []
        for _ in 0..<satellites {
            guard let value = r.unsigned(width: 8) else { return nil }
            milliseconds.append(Int(value))
        }
        for _ in 0..<satellites {
            guard let value = r.unsigned(width: 10) else { return nil }
            fractions.append(Int(value))
        }
        var cells = present.map { Cell(satellite: $0.0, signal: $0.1) }
        for index in cells.indices {
            guard let value = r.signed(width: 15) else { return nil }
            cells[index].finePseudorange = Int(value)
        }
        for index in cells.indices {
            guard let value = r.signed(width: 22) else { return nil }
            cells[index].finePhaseRange = Int(value)
        }
        for index in cells.indices {
            guard let value = r.unsigned(width: 4) else { return nil }
            cells[index].lockTime = Int(value)
        }
        for index in cells.indices {
            guard let value = r.unsigned(width: 1) else { return nil }
            cells[index].halfCycle = value == 1
        }
        for index in cells.indices {
            guard let value = r.unsigned(width: 6) else { return nil }
            cells[index].carrierToNoise = Int(value)
        }
        return (cells, Array(zip(milliseconds, fractions).map { (milliseconds: $0, fraction: $1) }))
    }
}

extension RTCM3Frame {
    /// DF003, the reference station id, of the messages that carry it right after the message number
    /// (observations 1001-1004 and 1009-1012, 1005-1008, 1033, 1230 and every MSM); nil for the others
    /// (ephemerides, 4072, ...).
    public var stationID: Int? {
        switch messageNumber {
        case 1001...1004, 1005...1008, 1009...1012, 1033, 1071...1137, 1230:
            var r = RTCM3BitReader(payload)
            guard r.skip(12), let station = r.unsigned(width: 12) else { return nil }
            return Int(station)
        default:
            return nil
        }
    }

    /// Whether this is an observation message a rover's RTK uses (MSM of any system, or the legacy
    /// 1001-1004 GPS and 1009-1012 GLONASS observations).
    public var isObservation: Bool {
        RTCM3MSM.system(messageNumber: messageNumber) != nil || (1001...1004).contains(messageNumber)
            || (1009...1012).contains(messageNumber)
    }

    /// Whether this is a reference station position (1005, 1006).
    public var isStationPosition: Bool { messageNumber == 1005 || messageNumber == 1006 }
}
