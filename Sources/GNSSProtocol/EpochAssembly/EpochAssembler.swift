// Groups messages into navigation epochs and turns each epoch into a Fix and a SkyView with gpsd's
// TPV / SKY meaning.
//
// An epoch is the set of messages a receiver sends for one navigation solution. Its parts, one idea to a
// file in this folder: where epochs begin and end (EpochBoundaries), what an epoch gathers and from which
// message (EpochAccumulator), what NMEA sentences and UBX messages add (NMEAIntake, UBXIntake), the GSV
// satellite sets (GSVSets), the fix with gpsd's error model (FixBuilding), and DOPs from the satellites'
// geometry (DOPGeometry). `GNSSDecoder` runs it behind the framer and the message decoders.

/// The output of one navigation epoch.
public struct Epoch: Hashable, Sendable {
    /// The position fix, when the epoch carried fix data (time, position, status).
    public var fix: Fix?
    /// The sky view, when the epoch carried satellite or DOP data.
    public var sky: SkyView?

    public init(fix: Fix?, sky: SkyView?) {
        self.fix = fix
        self.sky = sky
    }
}

/// Where the assembler puts the epochs a message ends, in order (at most two: the one before it, and its
/// own when it is the cycle's last).
protocol EpochSink {
    mutating func epochEnded(_ epoch: Epoch)
}

/// Assembles decoded messages into epochs.
public struct EpochAssembler: Sendable {
    public struct Options: Hashable, Sendable {
        /// Close an epoch as soon as the learned last message of a cycle arrives.
        public var learnCycleEnd: Bool
        /// Derive speed from successive positions and climb from successive altitudes when the receiver
        /// gives none (gpsd does).
        public var deriveRates: Bool
        public var errorModel: ErrorModel
        /// GPS - UTC seconds assumed until the receiver reports them (NAV-TIMEGPS); 18 since 2017.
        public var defaultLeapSeconds: Int
        /// Epochs after which a GSV satellite set that was not repeated leaves the sky view.
        public var satelliteExpiryEpochs: Int

        public init(
            learnCycleEnd: Bool = true, deriveRates: Bool = true, errorModel: ErrorModel = .gpsd,
            defaultLeapSeconds: Int = 18, satelliteExpiryEpochs: Int = 10
        ) {
            self.learnCycleEnd = learnCycleEnd
            self.deriveRates = deriveRates
            self.errorModel = errorModel
            self.defaultLeapSeconds = defaultLeapSeconds
            self.satelliteExpiryEpochs = satelliteExpiryEpochs
        }
    }

    public let options: Options
    /// The epoch in progress.
    var current = Accumulator()
    /// The key of the message that ended the last cycle (see EpochBoundaries).
    var learnedEnd: UInt64?
    // Kept across epochs: the date for NMEA times of day, leap seconds, the fixes rates are derived from.
    var lastDate: GNSSDate?
    var lastTimeOfDay: Int64?
    var leapSeconds: Int?
    /// The reference station of the last RTCM message the receiver said it used (UBX RXM-RTCM).
    var referenceStationUsed: Int?
    var lastFix: Fix?
    var olderFix: Fix?
    // Satellites: GSV sets, the GSA's used satellites, NAV-SAT's and NAV-SVINFO's lists and their epochs.
    var gsv = GSVSets()
    var usedSatellites: [UInt32] = []
    var navSatSatellites: [SatelliteInView] = []
    var navSatEpoch = -1_000
    var svInfoSatellites: [SatelliteInView] = []
    var svInfoEpoch = -1_000
    var epochCounter = 0

    public init(options: Options = Options()) {
        self.options = options
    }

    /// GPS - UTC seconds, once the receiver has reported them.
    public var reportedLeapSeconds: Int? { leapSeconds }

    /// Feeds one message; `emit` is called for each epoch it completes (at most twice per message).
    public mutating func consume(_ message: Message, emit: (Epoch) -> Void) {
        // The epochs are collected first and handed over after: a sink holding the closure would make it
        // escape, and its captures would be boxed on the heap at every call.
        var sink = CollectingSink()
        consume(message, into: &sink)
        if let first = sink.first { emit(first) }
        if let second = sink.second { emit(second) }
        for epoch in sink.more { emit(epoch) }
    }

    /// Feeds one message and returns the epochs it completed.
    public mutating func consume(_ message: Message) -> [Epoch] {
        var epochs: [Epoch] = []
        consume(message) { epochs.append($0) }
        return epochs
    }

    /// Feeds one message; `sink` gets the epochs it ends, in order.
    mutating func consume<Sink: EpochSink>(_ message: Message, into sink: inout Sink) {
        switch message {
        case .nmea(let sentence): consumeNMEA(sentence, into: &sink)
        case .ubx(let ubx): consumeUBX(ubx, into: &sink)
        case .rtcm3: return
        }
    }

    /// Closes the epoch in progress (at the end of a stream).
    public mutating func finish() -> Epoch? {
        guard !current.emitted, current.hasContent else { return nil }
        let epoch = close()
        current.reset()
        return epoch
    }

    /// The fix of the epoch in progress, as far as it is known (for an early position report).
    public var pendingFix: Fix? {
        guard current.hasFixData, !current.emitted else { return nil }
        let used = current.sawGSA ? current.usedThisEpoch : usedSatellites
        var geometry = GeometryOnDemand(of: currentSatellites(used: used))
        return buildFix(geometry: &geometry).fix
    }

    /// The pending fix of the epoch in progress the first time it has a position, then `nil` until the next
    /// epoch (or until a high-rate fix or a learned end that was wrong reported something in between).
    mutating func provisionalFix() -> Fix? {
        guard !current.emitted, !current.provisionalGiven, current.mayHavePosition, let fix = pendingFix,
            fix.hasPosition
        else { return nil }
        current.provisionalGiven = true
        return fix
    }

    /// Ends the epoch in progress: its fix (remembered for the next epochs) and its sky view.
    mutating func close() -> Epoch {
        epochCounter += 1
        if current.sawGSA {
            usedSatellites.removeAll(keepingCapacity: true)
            usedSatellites.append(contentsOf: current.usedThisEpoch)
        }
        // The satellites and their geometry (at most once, for both reports, when a DOP is missing).
        let satellites = current.hasContent ? currentSatellites(used: usedSatellites) : []
        var geometry = GeometryOnDemand(of: satellites)
        let fix = current.hasFixData ? makeFix(geometry: &geometry) : nil
        var sky: SkyView?
        if current.hasSkyData {
            var view = SkyView(time: fix?.time, dops: current.dops, satellites: satellites)
            geometry.fillMissing(in: &view.dops)
            sky = view
        }
        return Epoch(fix: fix, sky: sky)
    }

    /// The satellites a sky view shows now, `used` marking the GSV entries the GSA sentences list.
    func currentSatellites(used: [UInt32]) -> [SatelliteInView] {
        if epochCounter - navSatEpoch <= options.satelliteExpiryEpochs {
            return navSatSatellites
        }
        // A u-blox 8 can send NAV-SVINFO beside NAV-SAT. NAV-SAT wins while it is current, whichever of the
        // two came last: it names a satellite by system and number (SVINFO's single number cannot name
        // BeiDou above 37, QZSS above 7, or NavIC) and its health can say "unknown". gpsd takes the last.
        if epochCounter - svInfoEpoch <= options.satelliteExpiryEpochs {
            return svInfoSatellites
        }
        return gsv.satellites(epoch: epochCounter, expiry: options.satelliteExpiryEpochs, used: used)
    }
}

/// Holds the epochs of one message for the public `consume(_:emit:)`: two without allocating (the most a
/// message ends), any more in an array.
private struct CollectingSink: EpochSink {
    var first: Epoch?
    var second: Epoch?
    var more: [Epoch] = []

    mutating func epochEnded(_ epoch: Epoch) {
        if first == nil {
            first = epoch
        } else if second == nil {
            second = epoch
        } else {
            more.append(epoch)
        }
    }
}
