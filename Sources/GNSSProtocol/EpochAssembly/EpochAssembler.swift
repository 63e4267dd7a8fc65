// Groups messages into navigation epochs and turns each epoch into a Fix and a SkyView with gpsd's
// TPV / SKY meaning.
//
// An epoch is the set of messages a receiver sends for one navigation solution. NMEA sentences of an
// epoch share a time tag (hhmmss.ss), UBX NAV messages share iTOW; sentences without a tag (GSA, GSV,
// VTG) belong to the epoch they arrive in. A new tag closes the epoch. Like gpsd, the assembler also
// learns which message ends a cycle (the last one before the tag changed) and closes the epoch as
// soon as that message arrives, so a fix is out without waiting for the next epoch's first byte.

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

/// Assembles decoded messages into epochs.
public struct EpochAssembler: Sendable {
    /// Error model constants (gpsd's UERE guesses, metres at 95 %), used for `eph`/`epv`/`epx`/`epy`/`sep`
    /// when the receiver gives DOPs but no accuracy estimate.
    public struct ErrorModel: Hashable, Sendable {
        public var horizontal: Double
        public var vertical: Double
        public var position: Double
        public var horizontalDGPS: Double
        public var verticalDGPS: Double
        public var positionDGPS: Double

        public init(
            horizontal: Double = 15, vertical: Double = 23, position: Double = 19, horizontalDGPS: Double = 3.75,
            verticalDGPS: Double = 5.75, positionDGPS: Double = 4.75
        ) {
            self.horizontal = horizontal
            self.vertical = vertical
            self.position = position
            self.horizontalDGPS = horizontalDGPS
            self.verticalDGPS = verticalDGPS
            self.positionDGPS = positionDGPS
        }

        /// gpsd's constants (`gpsd_error_model`).
        public static let gpsd = ErrorModel()
    }

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
    private var current = Accumulator()
    private var learnedEnd: UInt64?
    // Persistent across epochs.
    private var lastDate: GNSSDate?
    private var lastTimeOfDay: Int64?
    private var leapSeconds: Int?
    private var lastFix: Fix?
    private var olderFix: Fix?
    private var gsvSets: [GSVSet] = []
    /// Whether the last NMEA sentence was a GSV: the GSV sentences in a row are one run.
    private var inGSVRun = false
    /// Counts the runs of GSV sentences that started over (with a sentence 1), and the sets the current one
    /// has filled so far, which lead `gsvSets` in the order they came.
    private var gsvRun = 0
    private var setsInRun = 0
    private var usedSatellites: [UInt32] = []
    private var navSatSatellites: [SatelliteInView] = []
    private var navSatEpoch = -1_000
    private var svInfoSatellites: [SatelliteInView] = []
    private var svInfoEpoch = -1_000
    private var epochCounter = 0

    public init(options: Options = Options()) {
        self.options = options
    }

    /// GPS - UTC seconds, once the receiver has reported them.
    public var reportedLeapSeconds: Int? { leapSeconds }

    /// Feeds one message; `emit` is called for each epoch it completes (at most twice per message).
    public mutating func consume(_ message: Message, emit: (Epoch) -> Void) {
        switch message {
        case .nmea(let sentence): consumeNMEA(sentence, emit)
        case .ubx(let ubx): consumeUBX(ubx, emit)
        case .rtcm3: return
        }
    }

    /// Feeds one message and returns the epochs it completed.
    public mutating func consume(_ message: Message) -> [Epoch] {
        var epochs: [Epoch] = []
        consume(message) { epochs.append($0) }
        return epochs
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
        var copy = self
        if copy.current.sawGSA { copy.usedSatellites = copy.current.usedThisEpoch }
        return copy.makeFix(commit: false, geometry: EpochAssembler.dops(from: copy.currentSatellites()))
    }

    // MARK: epoch boundaries

    private enum Tag {
        case nmea(Int64)
        case ubx(UInt32)
    }

    /// Starts, continues or closes epochs around a participating message; `apply` adds its data.
    /// `utc` is the message's UTC time of day (ns) when it has one: it lets an NMEA sentence and a UBX
    /// message, whose tags cannot be compared, tell whether they belong to the same epoch.
    private mutating func participate(
        key: UInt64, tag: Tag?, utc: Int64? = nil, _ emit: (Epoch) -> Void,
        apply: (inout Accumulator) -> Void
    ) {
        if let tag {
            var same: Bool?
            switch tag {
            case .nmea(let value): same = current.nmeaTag.map { $0 == value }
            case .ubx(let value):
                // u-blox iTOW may jitter by a few ms within one epoch.
                same = current.ubxTag.map { abs(Int64($0) - Int64(value)) <= 10 }
            }
            if same == nil, let utc, let known = current.utcTimeOfDay {
                // First message of this protocol in the epoch: compare UTC times across protocols.
                var difference = abs(utc - known)
                difference = min(difference, 86_400_000_000_000 - difference)
                if difference > 50_000_000 { same = false }
            }
            if current.emitted {
                if same == true {
                    // The learned end was wrong: the epoch goes on. Forget it and report again at the real end.
                    current.emitted = false
                    learnedEnd = nil
                } else {
                    current.reset()
                }
            } else if same == false {
                if options.learnCycleEnd {
                    // A cycle cut short in the middle of a GSV set (a receiver dropping output) teaches nothing.
                    learnedEnd = current.lastKey.flatMap { $0 & EpochAssembler.midSetKeyBit == 0 ? $0 : nil }
                }
                emit(close())
                current.reset()
            }
            switch tag {
            case .nmea(let value): current.nmeaTag = value
            case .ubx(let value): current.ubxTag = value
            }
            if let utc { current.utcTimeOfDay = utc }
        } else if current.emitted {
            current.reset()
        }
        apply(&current)
        current.lastKey = key
        if key == EpochAssembler.endOfEpochKey || (options.learnCycleEnd && key == learnedEnd) {
            emit(close())
            current.emitted = true
        }
    }

    private static let endOfEpochKey: UInt64 = 1 << 63 | 0x0161
    /// Marks the key of a GSV sentence that is not the last of its set: the end of a cycle is learnt only
    /// from a set's last sentence.
    private static let midSetKeyBit: UInt64 = 1 << 62

    // MARK: NMEA

    private mutating func consumeNMEA(_ sentence: NMEASentence, _ emit: (Epoch) -> Void) {
        let continuesGSVRun = inGSVRun
        inGSVRun = false
        let key: UInt64
        switch sentence {
        case .gga(let s):
            key = NMEAKey.make(s.talker, formatterGGA)
            participate(
                key: key, tag: s.time.map { .nmea($0.nanosecondsSinceMidnight) }, utc: s.time?.nanosecondsSinceMidnight,
                emit
            ) { a in
                a.hasFixData = true
                a.timeOfDay = s.time ?? a.timeOfDay
                a.ggaQuality = s.quality ?? 0
                a.satellitesUsed = s.satellitesUsed ?? a.satellitesUsed
                if let hdop = s.hdop, hdop < 99 { a.dops.horizontal = hdop }
                // A UBX solution in the same epoch is more precise: NMEA only fills what it lacks.
                guard let quality = s.quality, quality > 0, let lat = s.latitude, let lon = s.longitude,
                    a.positionSource == 0
                else { return }
                a.latitude = lat
                a.longitude = lon
                if let altitude = s.altitudeMSL { a.altitudeMSL = altitude }
                if let separation = s.geoidSeparation { a.geoidSeparation = separation }
                if let age = s.dgpsAge, let station = s.dgpsStation, age > 0.09 || station > 0 {
                    a.dgpsAge = age
                    a.dgpsStation = station
                }
            }
        case .rmc(let s):
            key = NMEAKey.make(s.talker, formatterRMC)
            participate(
                key: key, tag: s.time.map { .nmea($0.nanosecondsSinceMidnight) }, utc: s.time?.nanosecondsSinceMidnight,
                emit
            ) { a in
                a.hasFixData = true
                a.rmcValid = s.isValid
                guard s.isValid else { return }
                a.timeOfDay = s.time ?? a.timeOfDay
                if s.time != nil, let date = s.date { a.date = date }
                if let mode = s.modeIndicator { a.faaMode = mode }
                if let lat = s.latitude, let lon = s.longitude, a.positionSource == 0 {
                    a.latitude = lat
                    a.longitude = lon
                }
                if a.velocitySource == 0 {
                    if let speed = s.speed { a.speed = speed }
                    if let course = s.course { a.track = course }
                }
                if let variation = s.magneticVariation, abs(variation) > 0.09 { a.magneticVariation = variation }
            }
        case .gll(let s):
            key = NMEAKey.make(s.talker, formatterGLL)
            participate(
                key: key, tag: s.time.map { .nmea($0.nanosecondsSinceMidnight) }, utc: s.time?.nanosecondsSinceMidnight,
                emit
            ) { a in
                a.hasFixData = true
                let valid = s.status == "A" && s.modeIndicator != "N"
                a.gllValid = valid
                guard valid else { return }
                a.timeOfDay = s.time ?? a.timeOfDay
                if let lat = s.latitude, let lon = s.longitude, a.positionSource == 0 {
                    a.latitude = lat
                    a.longitude = lon
                }
            }
        case .gns(let s):
            key = NMEAKey.make(s.talker, formatterGNS)
            participate(
                key: key, tag: s.time.map { .nmea($0.nanosecondsSinceMidnight) }, utc: s.time?.nanosecondsSinceMidnight,
                emit
            ) { a in
                a.hasFixData = true
                let mode = s.modeIndicators?.unicodeScalars.first
                let valid = mode != nil && mode != "N" && s.navigationStatus != "U" && s.navigationStatus != "V"
                a.gnsValid = valid
                guard valid else { return }
                a.timeOfDay = s.time ?? a.timeOfDay
                if let mode { a.faaMode = mode }
                if let lat = s.latitude, let lon = s.longitude, a.positionSource == 0 {
                    a.latitude = lat
                    a.longitude = lon
                    if let altitude = s.altitudeMSL { a.altitudeMSL = altitude }
                    if let separation = s.geoidSeparation { a.geoidSeparation = separation }
                }
                if let hdop = s.hdop, hdop < 99 { a.dops.horizontal = hdop }
                a.satellitesUsed = s.satellitesUsed ?? a.satellitesUsed
            }
        case .gst(let s):
            key = NMEAKey.make(s.talker, formatterGST)
            participate(
                key: key, tag: s.time.map { .nmea($0.nanosecondsSinceMidnight) }, utc: s.time?.nanosecondsSinceMidnight,
                emit
            ) { _ in }
        case .zda(let s):
            key = NMEAKey.make(s.talker, formatterZDA)
            participate(
                key: key, tag: s.time.map { .nmea($0.nanosecondsSinceMidnight) }, utc: s.time?.nanosecondsSinceMidnight,
                emit
            ) { a in
                a.hasFixData = true
                guard let time = s.time, let date = s.date else { return }
                a.timeOfDay = time
                a.date = date
            }
        case .vtg(let s):
            key = NMEAKey.make(s.talker, formatterVTG)
            participate(key: key, tag: nil, emit) { a in
                guard s.modeIndicator != "N", a.velocitySource == 0 else { return }
                if let speed = s.speed { a.speed = speed }
                if let course = s.courseTrue { a.track = course }
            }
        case .gsa(let s):
            key = NMEAKey.make(s.talker, formatterGSA)
            participate(key: key, tag: nil, emit) { a in
                a.hasSkyData = true
                a.sawGSA = true
                if let type = s.fixType, (1...3).contains(type) { a.gsaFixType = max(a.gsaFixType ?? 0, type) }
                if let pdop = s.pdop, pdop < 99 { a.dops.position = pdop }
                if let hdop = s.hdop, hdop < 99 { a.dops.horizontal = hdop }
                if let vdop = s.vdop, vdop < 99 { a.dops.vertical = vdop }
                for id in s.satelliteIDs {
                    if let mapped = SatelliteNumbering.fromNMEA(id, talker: s.talker, systemID: s.systemID) {
                        a.usedThisEpoch.append(satelliteKey(mapped.system, mapped.svid))
                    }
                }
            }
        case .gsv(let s):
            // A GSV key names the signal too: a multi-band receiver sends one set per signal, and a cycle
            // that ends with the talker's last set must not end at its first.
            let signal = UInt64(truncatingIfNeeded: (s.signalID ?? -1) &+ 1) & 0xFFFF
            key = NMEAKey.make(s.talker, formatterGSV) | signal << 40
                | (s.sentenceNumber >= s.sentenceCount ? 0 : EpochAssembler.midSetKeyBit)
            // The satellites first: when this sentence ends the cycle, its epoch's SKY shows them.
            addGSV(s, startsRun: !continuesGSVRun)
            inGSVRun = true
            participate(key: key, tag: nil, emit) { a in a.hasSkyData = true }
        case .txt, .pmtk, .proprietary, .unsupported:
            return
        }
    }

    /// Takes a GSV sentence into its set (one per talker and signal id). As in gpsd's processGSV, the sets of a
    /// run of GSV sentences (up to the next other sentence) replace those of the run before, and a SKY shows the
    /// sets as they were when the last set was complete (gpsd reports the sky view then), so a set cut short,
    /// by a lost sentence or a receiver dropping output, does not show half.
    private mutating func addGSV(_ s: NMEAGSV, startsRun: Bool) {
        if startsRun && s.sentenceNumber <= 1 {
            for i in gsvSets.indices {
                gsvSets[i].receiving.removeAll(keepingCapacity: true)
                gsvSets[i].lastSentence = 0
            }
            gsvRun += 1
            setsInRun = 0
        }
        let setKey = GSVSet.Key(talker: s.talker, signalID: s.signalID)
        var index: Int
        if let found = gsvSets.firstIndex(where: { $0.key == setKey }) {
            index = found
        } else {
            gsvSets.append(GSVSet(key: setKey))
            index = gsvSets.count - 1
        }
        // The sets in the order of this run (gpsd lists the satellites in the order they came): a set
        // first sent in a later cycle, or sent in another place, moves to where it came.
        if gsvSets[index].run != gsvRun {
            gsvSets[index].run = gsvRun
            if index != setsInRun, setsInRun < gsvSets.count {
                gsvSets.insert(gsvSets.remove(at: index), at: setsInRun)
                index = setsInRun
            }
            setsInRun += 1
        }
        // A set starts over at its first sentence, and at a sentence that does not follow the last one
        // taken: the Quectel LC79D sends a set's sentence 1 without a signal id and sentence 2 with one,
        // so the set keyed with the id never sees a sentence 1.
        if s.sentenceNumber <= 1 || s.sentenceNumber <= gsvSets[index].lastSentence {
            gsvSets[index].receiving.removeAll(keepingCapacity: true)
        }
        gsvSets[index].lastSentence = s.sentenceNumber
        gsvSets[index].receivingEpoch = epochCounter
        let signal = EpochAssembler.ubxSignalID(nmea: s.signalID, talker: s.talker)
        for satellite in s.satellites {
            // A system's own talker says the system (GL, GA, GB/BD, GQ/QZ, GI: gpsd maps the Quectel LC79D's
            // Galileo 102 in GAGSV to E02); GP sentences also carry SBAS, QZSS and GLONASS numbers, and GN
            // sentences any system, so their numbers say the system, as in NMEA 4.0.
            let systemID = s.talker.system == .gps ? nil : s.talker.system?.nmeaSystemID
            guard let mapped = SatelliteNumbering.fromNMEA(satellite.id, talker: s.talker, systemID: systemID) else {
                continue
            }
            var entry = SatelliteInView(
                system: mapped.system, svid: mapped.svid, prn: mapped.prn,
                elevation: satellite.elevation.map(Double.init), azimuth: satellite.azimuth.map(Double.init),
                signalStrength: satellite.snr.map(Double.init), used: false, signalID: signal)
            if let elevation = entry.elevation, abs(elevation) > 90 { entry.elevation = nil }
            if let azimuth = entry.azimuth, azimuth < 0 || azimuth > 359 { entry.azimuth = nil }
            gsvSets[index].receiving.append(entry)
        }
        // The last sentence of a set: what the run has so far is what a SKY shows.
        if s.sentenceNumber >= s.sentenceCount {
            for i in gsvSets.indices {
                gsvSets[i].shown.removeAll(keepingCapacity: true)
                gsvSets[i].shown.append(contentsOf: gsvSets[i].receiving)
                gsvSets[i].epoch = gsvSets[i].receivingEpoch
            }
        }
    }

    /// The u-blox signal id of an NMEA 4.10+ GSV signal id, after gpsd's `nmea_sigid_to_ubx` table: the row
    /// is the talker's system (GP, GN and unknown talkers read as GPS, so SBAS and QZSS numbers in a GP
    /// sentence get GPS's ids, as gpsd gives them); `nil` for no signal id, for 0 ("all signals", Quectel)
    /// and for a signal u-blox has no id for (gpsd's 99, which it reports as 0: no `sigid`).
    ///
    /// One deliberate difference: Galileo 7 (E1-B/C) is 0 (E1 C), where gpsd's table says 4 (E5a Q,
    /// another band). u-blox receivers report E1 as 0: the ZED-F9T capture (ublox-zed-f9t-ubx_nmea_l5.log)
    /// sends GAGSV signals 7 and 1 beside NAV-SIG Galileo sigIds 0 and 4.
    static func ubxSignalID(nmea: Int?, talker: NMEATalker) -> Int? {
        guard let nmea, nmea > 0 else { return nil }
        switch talker.system {
        case .glonass?:
            // G1 C/A, G2 C/A.
            switch nmea {
            case 1: return 0
            case 3: return 2
            default: return nil
            }
        case .galileo?:
            // E5a, E5b, E6-A, E6-BC, L1-A, L1-BC.
            switch nmea {
            case 1: return 3
            case 2: return 5
            case 4: return 10
            case 5: return 8
            case 6, 7: return 0
            default: return nil
            }
        case .beidou?:
            // B1I, B1Q, B1C, B1A, B2a, B3I, B2I.
            switch nmea {
            case 1, 4: return 0
            case 2, 11: return 2
            case 3: return 5
            case 5: return 7
            case 8: return 4
            default: return nil
            }
        case .qzss?:
            // L1 C/A, L1S, L2 CM, L2 CL, L5 I, L5 Q.
            switch nmea {
            case 1: return 0
            case 4: return 1
            case 5: return 4
            case 6: return 5
            case 7: return 8
            case 8: return 9
            default: return nil
            }
        case .navic?:
            return nmea == 1 ? 0 : nil
        default:
            // GPS: L1 C/A, L2 CM, L2 CL, L5 I, L5 Q.
            switch nmea {
            case 1: return 0
            case 5: return 4
            case 6: return 3
            case 7: return 6
            case 8: return 7
            default: return nil
            }
        }
    }

    // MARK: UBX

    private mutating func consumeUBX(_ message: UBXMessage, _ emit: (Epoch) -> Void) {
        let id = message.messageID
        let key: UInt64 = 1 << 63 | UInt64(id.messageClass) << 8 | UInt64(id.id)
        switch message {
        case .navPVT(let m):
            participate(key: key, tag: .ubx(m.iTOW), utc: m.time?.timeOfDay.nanosecondsSinceMidnight, emit) { a in
                a.hasFixData = true
                a.ubxFixSource = 3
                a.fullTime = m.time ?? a.fullTime
                if m.time != nil { a.ept = m.timeAccuracy }
                let (mode, status) = EpochAssembler.ubxMode(fixType: m.fixType, differential: m.differentialSolution)
                a.ubxMode = mode
                a.ubxStatus = status
                if mode >= .twoD {
                    switch m.carrierSolution {
                    case 1: a.ubxStatus = .rtkFloat
                    case 2: a.ubxStatus = .rtkFixed
                    default: break
                    }
                }
                if a.positionSource < 2 {
                    a.positionSource = 2
                    a.latitude = m.latitude
                    a.longitude = m.longitude
                    a.altitudeHAE = m.altitudeHAE
                    a.altitudeMSL = m.altitudeMSL
                }
                a.velocitySource = 3
                a.speed = m.groundSpeed
                a.track = m.headingOfMotion
                a.velocityNorth = m.velocityNorth
                a.velocityEast = m.velocityEast
                a.velocityDown = m.velocityDown
                a.climb = -m.velocityDown
                a.eph = m.horizontalAccuracy
                a.epv = m.verticalAccuracy
                a.eps = m.speedAccuracy
                a.satellitesUsed = Int(m.numSV)
                if m.pDOP < 9999 { a.dops.position = m.positionDOP }
            }
        case .navSOL(let m):
            var solutionTimeOfDay: Int64?
            if let gps = m.gpsNanoseconds {
                solutionTimeOfDay = utc(gpsNanoseconds: gps).timeOfDay.nanosecondsSinceMidnight
            }
            let solutionTime = m.gpsNanoseconds.map { utc(gpsNanoseconds: $0) }
            participate(key: key, tag: .ubx(m.iTOW), utc: solutionTimeOfDay, emit) { a in
                a.hasFixData = true
                let (mode, status) = EpochAssembler.ubxMode(fixType: m.gpsFix, differential: m.differentialSolution)
                if a.ubxFixSource < 2 {
                    a.ubxFixSource = 2
                    a.ubxMode = mode
                    a.ubxStatus = status
                }
                if a.fullTime == nil { a.fullTime = solutionTime }
                let position = m.geodetic
                if a.positionSource < 1 {
                    a.positionSource = 1
                    a.latitude = position.latitude
                    a.longitude = position.longitude
                    a.altitudeHAE = position.height
                }
                let velocity = WGS84.ned(
                    vx: Double(m.ecefVX) / 100, vy: Double(m.ecefVY) / 100, vz: Double(m.ecefVZ) / 100,
                    latitude: position.latitude, longitude: position.longitude)
                if a.velocitySource < 1 {
                    a.velocitySource = 1
                    a.speed = (velocity.north * velocity.north + velocity.east * velocity.east).squareRoot()
                    var track = arcTangent2(velocity.east, velocity.north) * 180 / .pi
                    if track < 0 { track += 360 }
                    a.track = track
                }
                if a.climb == nil { a.climb = -velocity.down }
                if a.eps == nil { a.eps = Double(m.sAcc) / 100 }
                a.satellitesUsed = a.satellitesUsed ?? Int(m.numSV)
                if m.pDOP < 9999, a.dops.position == nil { a.dops.position = Double(m.pDOP) * 0.01 }
            }
        case .navPOSLLH(let m):
            participate(key: key, tag: .ubx(m.iTOW), emit) { a in
                a.hasFixData = true
                guard a.positionSource <= 2 else { return }
                a.positionSource = 2
                a.latitude = m.latitude
                a.longitude = m.longitude
                a.altitudeHAE = m.altitudeHAE
                a.altitudeMSL = m.altitudeMSL
                if a.eph == nil { a.eph = Double(m.hAcc) / 1000 }
                if a.epv == nil { a.epv = Double(m.vAcc) / 1000 }
            }
        case .navVELNED(let m):
            participate(key: key, tag: .ubx(m.iTOW), emit) { a in
                // NAV-PVT gives the same velocity in mm/s; VELNED's cm/s only replaces coarser sources.
                guard a.velocitySource < 2 else { return }
                a.velocitySource = 2
                a.speed = m.groundSpeed
                a.track = m.headingDegrees
                a.velocityNorth = Double(m.velN) / 100
                a.velocityEast = Double(m.velE) / 100
                a.velocityDown = Double(m.velD) / 100
                a.climb = -Double(m.velD) / 100
                if a.eps == nil { a.eps = Double(m.sAcc) / 100 }
            }
        case .navHPPOSLLH(let m):
            participate(key: key, tag: .ubx(m.iTOW), emit) { a in
                guard !m.invalid else { return }
                a.hasFixData = true
                a.positionSource = 3
                a.latitude = m.latitude
                a.longitude = m.longitude
                a.altitudeHAE = m.altitudeHAE
                a.altitudeMSL = m.altitudeMSL
            }
        case .hnrPVT(let m):
            // A high-rate solution between navigation epochs: a fix of its own, outside the epoch in progress.
            emit(standaloneFix(m))
        case .navTimeGPS(let m):
            if m.leapSecondsValid { leapSeconds = Int(m.leapS) }
            participate(key: key, tag: .ubx(m.iTOW), emit) { a in
                if a.fullTime == nil, let gps = m.gpsNanoseconds {
                    a.hasFixData = true
                    a.gpsTime = gps
                }
            }
        case .navTimeUTC(let m):
            participate(key: key, tag: .ubx(m.iTOW), utc: m.time?.timeOfDay.nanosecondsSinceMidnight, emit) { a in
                a.hasFixData = true
                if let time = m.time, a.fullTime == nil {
                    a.fullTime = time
                    a.ept = Double(m.tAcc) * 1e-9
                }
            }
        case .navStatus(let m):
            participate(key: key, tag: .ubx(m.iTOW), emit) { a in
                a.hasFixData = true
                if a.ubxFixSource < 1 {
                    a.ubxFixSource = 1
                    if m.gpsFixOK {
                        let (mode, status) = EpochAssembler.ubxMode(
                            fixType: m.gpsFix, differential: m.fixStat & 0x02 != 0)
                        a.ubxMode = mode
                        a.ubxStatus = status
                    } else {
                        a.ubxMode = .noFix
                        a.ubxStatus = .unknown
                    }
                }
            }
        case .navDOP(let m):
            participate(key: key, tag: .ubx(m.iTOW), emit) { a in
                a.hasSkyData = true
                // u-blox sends 99.99 for a DOP it does not know.
                a.dops = m.dops.keeping(below: 99.99)
            }
        case .navSAT(let m):
            participate(key: key, tag: .ubx(m.iTOW), emit) { a in a.hasSkyData = true }
            navSatSatellites.removeAll(keepingCapacity: true)
            for s in m.satellites {
                // A satellite with no number gpsd could give it (GLONASS 255: slot unknown) is left
                // out, as gpsd's SKY leaves out PRN 0.
                guard let system = s.system, let prn = SatelliteNumbering.prn(system: system, svid: Int(s.svId))
                else { continue }
                // C/N0 is always measured here: 0 dBHz (no signal) is reported, as gpsd does, where
                // a GSV's empty SNR field is unknown and left out.
                var entry = SatelliteInView(
                    system: system, svid: Int(s.svId), prn: prn,
                    elevation: abs(Int(s.elev)) <= 90 ? Double(s.elev) : nil,
                    azimuth: (0...359).contains(Int(s.azim)) ? Double(s.azim) : nil,
                    signalStrength: Double(s.cno), used: s.used)
                entry.pseudorangeResidual = s.pseudorangeResidual
                entry.quality = Int(s.qualityIndicator)
                entry.health = Int(s.health)
                navSatSatellites.append(entry)
            }
            navSatEpoch = epochCounter
        case .navSVINFO(let m):
            // u-blox 4 to 8 (and M8 timing firmware): the same satellite list as NAV-SAT, after gpsd's
            // ubx_msg_nav_svinfo. Which of the two a SKY reports is decided in currentSatellites().
            participate(key: key, tag: .ubx(m.iTOW), emit) { a in a.hasSkyData = true }
            svInfoSatellites.removeAll(keepingCapacity: true)
            for c in m.channels {
                // Numbers outside u-blox's single-number scheme (0, 255: GLONASS slot unknown) are left out,
                // as gpsd skips a satellite it cannot give a PRN.
                guard let satellite = c.satellite else { continue }
                // Elevation and azimuth ranges as in NAV-SAT above; C/N0 0 is reported as 0.
                var entry = SatelliteInView(
                    system: satellite.system, svid: satellite.svid, prn: satellite.prn,
                    elevation: abs(Int(c.elev)) <= 90 ? Double(c.elev) : nil,
                    azimuth: (0...359).contains(Int(c.azim)) ? Double(c.azim) : nil,
                    signalStrength: Double(c.cno), used: c.used)
                entry.pseudorangeResidual = c.pseudorangeResidual
                entry.quality = Int(c.qualityIndicator)
                // gpsd's SKY health: 1 healthy, 2 unhealthy (NAV-SVINFO has no "unknown").
                entry.health = c.unhealthy ? 2 : 1
                svInfoSatellites.append(entry)
            }
            svInfoEpoch = epochCounter
        case .other(let id, let payload) where id.messageClass == UBX.Class.nav && payload.count >= 4:
            // Other NAV messages still mark the epoch; most carry iTOW first, a few after a version byte.
            let offset = [0x13, 0x14, 0x3B, 0x3C].contains(id.id) ? 4 : 0
            guard payload.count >= offset + 4 else { return }
            let start = payload.startIndex + offset
            let iTOW =
                UInt32(payload[start]) | UInt32(payload[start + 1]) << 8 | UInt32(payload[start + 2]) << 16
                | UInt32(payload[start + 3]) << 24
            participate(key: key, tag: .ubx(iTOW), emit) { _ in }
        default:
            return
        }
    }

    /// gpsd's mode and status for a u-blox fix type (NAV-PVT, NAV-SOL, NAV-STATUS).
    static func ubxMode(fixType: UInt8, differential: Bool) -> (FixMode, FixStatus) {
        switch fixType {
        case 1: return (.twoD, .deadReckoning)
        case 2: return (.twoD, differential ? .dgps : .gps)
        case 3: return (.threeD, differential ? .dgps : .gps)
        case 4: return (.threeD, differential ? .dgps : .gnssDeadReckoning)
        case 5: return (.threeD, .timeOnly)
        default: return (.noFix, .unknown)
        }
    }

    private func utc(gpsNanoseconds: Int64) -> GNSSTime {
        let leap = Int64(leapSeconds ?? options.defaultLeapSeconds)
        // Saturates at the ends of GNSSTime's range (years 1678-2262), as GNSSTime(date:time:) does.
        let (unix, overflow) = gpsNanoseconds.addingReportingOverflow((gpsEpochUnixSeconds - leap) * 1_000_000_000)
        return GNSSTime(nanosecondsSinceEpoch: overflow ? (gpsNanoseconds < 0 ? .min : .max) : unix)
    }

    private mutating func standaloneFix(_ m: UBXHnrPVT) -> Epoch {
        var fix = Fix()
        fix.time = m.time
        if fix.time != nil { fix.ept = 0.005 }
        let (mode, status) = EpochAssembler.ubxMode(fixType: m.gpsFix, differential: m.flags & 0x02 != 0)
        fix.mode = mode
        fix.status = mode >= .twoD ? status : .unknown
        if mode >= .twoD {
            fix.latitude = Double(m.lat) * 1e-7
            fix.longitude = Double(m.lon) * 1e-7
            fix.altitudeHAE = Double(m.height) * 1e-3
            fix.altitudeMSL = Double(m.hMSL) * 1e-3
            fix.geoidSeparation = Double(m.height - m.hMSL) * 1e-3
            fix.speed = Double(m.gSpeed) * 1e-3
            var track = Double(m.headMot) * 1e-5
            if track < 0 { track += 360 }
            fix.track = track
            fix.eph = Double(m.hAcc) * 1e-3
            fix.epv = Double(m.vAcc) * 1e-3
            fix.eps = Double(m.sAcc) * 1e-3
        }
        applyErrorModel(&fix)
        if let time = fix.time {
            if let last = lastFix, let lastTime = last.time, abs(time.seconds(since: lastTime)) >= 0.0099 {
                olderFix = last
            }
            lastFix = fix
        }
        return Epoch(fix: fix, sky: nil)
    }

    // MARK: closing an epoch

    private mutating func close() -> Epoch {
        epochCounter += 1
        if current.sawGSA {
            usedSatellites.removeAll(keepingCapacity: true)
            usedSatellites.append(contentsOf: current.usedThisEpoch)
        }
        // The satellites and their geometry, once for both reports.
        let satellites = current.hasContent ? currentSatellites() : []
        let geometry = EpochAssembler.dops(from: satellites)
        let fix = current.hasFixData ? makeFix(commit: true, geometry: geometry) : nil
        var sky: SkyView?
        if current.hasSkyData {
            var view = SkyView(time: fix?.time, dops: current.dops, satellites: satellites)
            view.dops.fillMissing(from: geometry)
            sky = view
        }
        return Epoch(fix: fix, sky: sky)
    }

    private mutating func makeFix(commit: Bool, geometry: DilutionOfPrecision) -> Fix {
        let a = current
        var fix = Fix()

        // Time: a full UTC time from UBX, else the NMEA time of day on the latest date.
        if let time = a.fullTime {
            fix.time = time
        } else if let gps = a.gpsTime {
            fix.time = utc(gpsNanoseconds: gps)
        } else if let tod = a.timeOfDay {
            let ns = tod.nanosecondsSinceMidnight
            var date = a.date
            if date == nil, let last = lastDate {
                // Roll the remembered date over at midnight.
                if let previous = lastTimeOfDay, ns + 43_200_000_000_000 < previous {
                    date = GNSSDate(daysSinceEpoch: last.daysSinceEpoch + 1)
                } else {
                    date = last
                }
            }
            if let date {
                fix.time = GNSSTime(date: date, time: tod)
                if commit {
                    lastDate = date
                    lastTimeOfDay = ns
                }
            }
        }
        if fix.time != nil { fix.ept = a.ept ?? 0.005 }

        // Mode and status.
        let hasPosition = a.latitude != nil && a.longitude != nil
        if let mode = a.ubxMode {
            fix.mode = mode
            fix.status = a.ubxStatus ?? .unknown
        } else if a.ggaQuality == nil && a.rmcValid == nil && a.gllValid == nil && a.gnsValid == nil
            && a.gsaFixType == nil
        {
            // Nothing in the epoch says whether there is a fix (time messages only): gpsd's mode 0.
            fix.mode = .unknown
        } else {
            let positive = (a.ggaQuality ?? 0) > 0 || a.rmcValid == true || a.gllValid == true || a.gnsValid == true
            if !positive || !hasPosition {
                fix.mode = .noFix
            } else if let type = a.gsaFixType {
                fix.mode = FixMode(rawValue: type) ?? .noFix
            } else if a.altitudeMSL != nil || a.altitudeHAE != nil {
                fix.mode = (a.satellitesUsed ?? 4) >= 4 || a.satellitesUsed == nil ? .threeD : .twoD
            } else {
                fix.mode = (lastFix?.mode ?? .unknown) == .threeD && a.rmcValid == true ? .threeD : .twoD
            }
            if fix.mode >= .twoD {
                fix.status = EpochAssembler.status(quality: a.ggaQuality, faa: a.faaMode)
            }
        }

        if fix.mode >= .twoD {
            fix.latitude = a.latitude
            fix.longitude = a.longitude
            fix.geoidSeparation = a.geoidSeparation
            if let hae = a.altitudeHAE, let msl = a.altitudeMSL {
                fix.altitudeHAE = hae
                fix.altitudeMSL = msl
                fix.geoidSeparation = fix.geoidSeparation ?? hae - msl
            } else if let msl = a.altitudeMSL {
                fix.altitudeMSL = msl
                fix.altitudeHAE = a.geoidSeparation.map { msl + $0 }
            } else if let hae = a.altitudeHAE {
                fix.altitudeHAE = hae
                fix.altitudeMSL = a.geoidSeparation.map { hae - $0 }
            }
            fix.speed = a.speed
            if let track = a.track { fix.track = track < 0 ? track + 360 : (track >= 360 ? track - 360 : track) }
            fix.climb = fix.mode == .threeD ? a.climb : nil
            fix.magneticVariation = a.magneticVariation
            if let variation = a.magneticVariation, let track = fix.track {
                var magnetic = track + variation
                if magnetic < 0 { magnetic += 360 }
                if magnetic >= 360 { magnetic -= 360 }
                fix.magneticTrack = magnetic
            }
            fix.velocityNorth = a.velocityNorth
            fix.velocityEast = a.velocityEast
            fix.velocityDown = a.velocityDown
            fix.dgpsAge = a.dgpsAge
            fix.dgpsStation = a.dgpsStation
        }
        fix.satellitesUsed = a.satellitesUsed
        fix.dops = a.dops
        if a.hasSkyData || !a.dops.isEmpty {
            // Fill the DOPs the receiver did not send from the geometry of the used satellites (as gpsd does).
            fix.dops.fillMissing(from: geometry)
        }
        fix.eph = a.eph
        fix.epv = a.epv
        fix.eps = a.eps
        fix.epx = a.epx
        fix.epy = a.epy
        applyErrorModel(&fix)
        if commit {
            if let time = fix.time {
                if let last = lastFix, let lastTime = last.time, abs(time.seconds(since: lastTime)) >= 0.0099 {
                    olderFix = last
                }
                lastFix = fix
            }
        }
        return fix
    }

    static func status(quality: Int?, faa: Unicode.Scalar?) -> FixStatus {
        switch quality {
        case 1?: return .gps
        case 2?: return .dgps
        case 3?: return .ppsFix
        case 4?: return .rtkFixed
        case 5?: return .rtkFloat
        case 6?: return .deadReckoning
        case 7?: return .timeOnly
        case 8?: return .simulated
        default: break
        }
        switch faa {
        case "D"?, "P"?: return .dgps
        case "E"?: return .deadReckoning
        case "F"?: return .rtkFloat
        case "R"?: return .rtkFixed
        case "S"?: return .simulated
        case "M"?: return .timeOnly
        default: return .gps
        }
    }

    /// gpsd's `gpsd_error_model`: estimates from DOPs, and rates from the previous fix.
    private func applyErrorModel(_ fix: inout Fix) {
        let model = options.errorModel
        let dgps = fix.status == .dgps
        let h = dgps ? model.horizontalDGPS : model.horizontal
        let v = dgps ? model.verticalDGPS : model.vertical
        let p = dgps ? model.positionDGPS : model.position
        guard fix.mode >= .twoD else { return }
        if fix.dops.horizontal != nil {
            if fix.epx == nil, let x = fix.dops.x { fix.epx = x * h }
            if fix.epy == nil, let y = fix.dops.y { fix.epy = y * h }
        }
        if fix.mode == .threeD, fix.epv == nil, let vdop = fix.dops.vertical { fix.epv = vdop * v }
        if fix.eph == nil, let hdop = fix.dops.horizontal { fix.eph = hdop * p }
        if fix.sep == nil, let pdop = fix.dops.position { fix.sep = pdop * p }

        // Rates against the previous fix with a different time.
        guard let time = fix.time else { return }
        var previous = lastFix
        if let last = previous, let lastTime = last.time, abs(time.seconds(since: lastTime)) < 0.0099 {
            previous = olderFix
        }
        guard let old = previous, let oldTime = old.time else { return }
        let dt = time.seconds(since: oldTime)
        guard dt > 0, old.mode >= .twoD else { return }
        if options.deriveRates {
            if fix.speed == nil, let lat = fix.latitude, let lon = fix.longitude, let oldLat = old.latitude,
                let oldLon = old.longitude
            {
                let speed = EpochAssembler.earthDistance(lat, lon, oldLat, oldLon) / dt
                if speed < 9999.9 { fix.speed = speed }
            }
            if fix.mode == .threeD, old.mode == .threeD, fix.climb == nil, let hae = fix.altitudeHAE,
                let oldHAE = old.altitudeHAE
            {
                let climb = (hae - oldHAE) / dt
                if abs(climb) < 9999.9 { fix.climb = climb }
            }
        }
        if fix.eps == nil, let ox = old.epx, let oy = old.epy, let x = fix.epx, let y = fix.epy {
            fix.eps = (max(ox, oy) + max(x, y)) / dt
        }
        if fix.mode == .threeD, fix.epc == nil, let oldV = old.epv, let epv = fix.epv {
            fix.epc = (oldV + epv) / dt
        }
    }

    /// Distance on the WGS84 ellipsoid's mean sphere (gpsd's `earth_distance` uses a sphere too).
    static func earthDistance(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let toRadians = Double.pi / 180
        let dLat = (lat2 - lat1) * toRadians
        let dLon = (lon2 - lon1) * toRadians
        let a =
            sine(dLat / 2) * sine(dLat / 2)
            + cosine(lat1 * toRadians) * cosine(lat2 * toRadians) * sine(dLon / 2) * sine(dLon / 2)
        return 2 * WGS84.semiMajorAxis * arcSine(a.squareRoot())
    }

    // MARK: sky

    private func currentSatellites() -> [SatelliteInView] {
        if epochCounter - navSatEpoch <= options.satelliteExpiryEpochs {
            return navSatSatellites
        }
        // A u-blox 8 can send NAV-SVINFO beside NAV-SAT. NAV-SAT wins while it is current, whichever of the
        // two came last: it names a satellite by system and number (SVINFO's single number cannot name
        // BeiDou above 37, QZSS above 7, or NavIC) and its health can say "unknown". gpsd takes the last.
        if epochCounter - svInfoEpoch <= options.satelliteExpiryEpochs {
            return svInfoSatellites
        }
        // gpsd's SKY from NMEA 4.10+ GSV lists a satellite once per signal, each entry with its sigid, in the
        // order the sentences came (one GSV set per talker and signal, sets in the order the receiver sends
        // them), and counts entries in nSat and uSat. An entry is used when the GSA of its system lists the
        // satellite and the entry has a signal (SNR above 0): GSA does not say which signals were used, so
        // gpsd marks every received signal of a used satellite (driver_nmea0183.c processGSV). Entries
        // without SNR, elevation or azimuth are kept. The same satellite and signal in two sets (one
        // satellite in GP and GN sentences) is one entry, with the strongest SNR.
        var satellites: [SatelliteInView] = []
        var total = 0
        for set in gsvSets where epochCounter - set.epoch <= options.satelliteExpiryEpochs { total += set.shown.count }
        satellites.reserveCapacity(total)
        // System, svid and the set's NMEA signal id of each entry, to find the same satellite and signal.
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: max(1, total)) { keys in
            var count = 0
            for set in gsvSets where epochCounter - set.epoch <= options.satelliteExpiryEpochs {
                let signal = (UInt64(truncatingIfNeeded: (set.key.signalID ?? -1) &+ 1) & 0xFFFF_FFFF) << 32
                for var satellite in set.shown {
                    let key = signal | UInt64(satelliteKey(satellite.system, satellite.svid))
                    let used = usedSatellites.contains(satelliteKey(satellite.system, satellite.svid))
                    if let existing = keys[0..<count].firstIndex(of: key) {
                        if let ss = satellite.signalStrength, ss > (satellites[existing].signalStrength ?? -1) {
                            satellites[existing].signalStrength = ss
                            satellites[existing].used = used && ss > 0
                        }
                        continue
                    }
                    satellite.used = used && (satellite.signalStrength ?? 0) > 0
                    satellites.append(satellite)
                    keys[count] = key
                    count += 1
                }
            }
        }
        return satellites
    }

    /// DOPs from the line-of-sight geometry of the used satellites (gpsd's `fill_dop`): needs four. A satellite
    /// counts once however many of its signals are listed: DOP is the geometry of the lines of sight. (gpsd
    /// counts every used entry of its SKY, so a satellite with two used signals weighs twice in its DOPs.)
    static func dops(from satellites: [SatelliteInView]) -> DilutionOfPrecision {
        // The normal matrix (A^T A) of the line-of-sight rows (x, y, z, 1), row-major in a SIMD16.
        var m = SIMD16<Double>()
        var count = 0
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: max(1, satellites.count)) { counted in
            for s in satellites where s.used {
                guard let az = s.azimuth, let el = s.elevation, s.prn > 0 else { continue }
                let key = satelliteKey(s.system, s.svid)
                if counted[0..<count].contains(key) { continue }
                counted[count] = key
                let a = az * .pi / 180
                let e = el * .pi / 180
                let ce = cosine(e)
                let v = SIMD4<Double>(sine(a) * ce, cosine(a) * ce, sine(e), 1)
                for i in 0..<4 {
                    let row = v * v[i]
                    m[i * 4] += row[0]
                    m[i * 4 + 1] += row[1]
                    m[i * 4 + 2] += row[2]
                    m[i * 4 + 3] += row[3]
                }
                count += 1
            }
        }
        guard count >= 4, let inverse = invert4x4(m) else { return DilutionOfPrecision() }
        let xx = inverse[0], yy = inverse[5], zz = inverse[10], tt = inverse[15]
        guard xx >= 0, yy >= 0, zz >= 0, tt >= 0 else { return DilutionOfPrecision() }
        return DilutionOfPrecision(
            x: xx.squareRoot(), y: yy.squareRoot(), vertical: zz.squareRoot(), time: tt.squareRoot(),
            horizontal: (xx + yy).squareRoot(), geometric: (xx + yy + zz + tt).squareRoot(),
            position: (xx + yy + zz).squareRoot())
    }

    /// Gauss-Jordan inversion with partial pivoting of a row-major 4x4 matrix; `nil` when singular.
    static func invert4x4(_ matrix: SIMD16<Double>) -> SIMD16<Double>? {
        withUnsafeTemporaryAllocation(of: Double.self, capacity: 32) { storage -> SIMD16<Double>? in
            // a: the matrix, b: the identity, both row-major; row operations on both.
            let a = storage.baseAddress!
            let b = a + 16
            for i in 0..<16 {
                a[i] = matrix[i]
                b[i] = i % 5 == 0 ? 1 : 0
            }
            for column in 0..<4 {
                var pivot = column
                for row in column..<4 where abs(a[row * 4 + column]) > abs(a[pivot * 4 + column]) { pivot = row }
                guard abs(a[pivot * 4 + column]) > 1e-12 else { return nil }
                if pivot != column {
                    for j in 0..<4 {
                        swap(&a[column * 4 + j], &a[pivot * 4 + j])
                        swap(&b[column * 4 + j], &b[pivot * 4 + j])
                    }
                }
                let scale = 1 / a[column * 4 + column]
                for j in 0..<4 {
                    a[column * 4 + j] *= scale
                    b[column * 4 + j] *= scale
                }
                for row in 0..<4 where row != column {
                    let factor = a[row * 4 + column]
                    if factor == 0 { continue }
                    for j in 0..<4 {
                        a[row * 4 + j] -= factor * a[column * 4 + j]
                        b[row * 4 + j] -= factor * b[column * 4 + j]
                    }
                }
            }
            var inverse = SIMD16<Double>()
            for i in 0..<16 { inverse[i] = b[i] }
            return inverse
        }
    }
}

/// What an epoch in progress has gathered.
struct Accumulator: Sendable {
    var nmeaTag: Int64?
    var ubxTag: UInt32?
    /// UTC time of day (ns) of the epoch, once a message has given it.
    var utcTimeOfDay: Int64?
    var emitted = false
    var lastKey: UInt64?
    var hasFixData = false
    var hasSkyData = false

    var timeOfDay: TimeOfDay?
    var date: GNSSDate?
    var fullTime: GNSSTime?
    var gpsTime: Int64?
    var ept: Double?

    var latitude: Double?
    var longitude: Double?
    var altitudeMSL: Double?
    var altitudeHAE: Double?
    var geoidSeparation: Double?
    var speed: Double?
    var track: Double?
    var climb: Double?
    var magneticVariation: Double?
    var velocityNorth: Double?
    var velocityEast: Double?
    var velocityDown: Double?
    var eph: Double?
    var epv: Double?
    var eps: Double?
    var epx: Double?
    var epy: Double?
    var dgpsAge: Double?
    var dgpsStation: Int?

    var ggaQuality: Int?
    var rmcValid: Bool?
    var gllValid: Bool?
    var gnsValid: Bool?
    var faaMode: Unicode.Scalar?
    var gsaFixType: Int?
    var sawGSA = false
    /// Satellites the GSA sentences of this epoch list as used (system and svid keys).
    var usedThisEpoch: [UInt32] = []
    /// 3 NAV-PVT, 2 NAV-SOL, 1 NAV-STATUS: the best UBX source of mode and status so far.
    var ubxFixSource = 0
    /// 3 NAV-HPPOSLLH, 2 NAV-PVT or NAV-POSLLH, 1 NAV-SOL: the most precise UBX position so far.
    var positionSource = 0
    /// 3 NAV-PVT, 2 NAV-VELNED, 1 NAV-SOL: the most precise UBX velocity so far.
    var velocitySource = 0
    var ubxMode: FixMode?
    var ubxStatus: FixStatus?
    var satellitesUsed: Int?
    var dops = DilutionOfPrecision()

    var hasContent: Bool { hasFixData || hasSkyData }

    mutating func reset() {
        var used = usedThisEpoch
        used.removeAll(keepingCapacity: true)
        self = Accumulator()
        usedThisEpoch = used
    }
}

struct GSVSet: Sendable {
    /// One set of GSV sentences per talker and signal (NMEA 4.10 sends one set per signal).
    struct Key: Equatable, Sendable {
        var talker: NMEATalker
        /// The NMEA signal id, as the sentences carry it.
        var signalID: Int?
    }

    var key: Key
    /// The satellites of the sentences received so far, and the epoch they came in.
    var receiving: [SatelliteInView] = []
    var receivingEpoch = 0
    /// The number of the last sentence taken into `receiving`, and the run it came in.
    var lastSentence = 0
    var run = -1
    /// What a SKY shows: `receiving` as it was when the last set of the run was complete, and its epoch.
    var shown: [SatelliteInView] = []
    var epoch = 0
}

enum NMEAKey {
    static func make(_ talker: NMEATalker, _ formatter: UInt32) -> UInt64 {
        UInt64(talker.first) << 32 | UInt64(talker.second) << 24 | UInt64(formatter)
    }
}

@inline(__always)
func satelliteKey(_ system: GNSSSystem, _ svid: Int) -> UInt32 {
    UInt32(system.rawValue) << 16 | UInt32(truncatingIfNeeded: svid & 0xFFFF)
}
