// The satellites NMEA GSV sentences report: one set of sentences per talker and signal, the runs of
// sets a cycle sends, the sets a SKY shows, and the u-blox signal id of an NMEA signal id.

/// One set of GSV sentences per talker and signal (NMEA 4.10 sends one set per signal).
struct GSVSet: Sendable {
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

/// The GSV sets received so far, in the order of the current run.
struct GSVSets: Sendable {
    var sets: [GSVSet] = []
    /// Whether the last NMEA sentence was a GSV: the GSV sentences in a row are one run.
    var inRun = false
    /// Counts the runs of GSV sentences that started over (with a sentence 1), and the sets the current one
    /// has filled so far, which lead `sets` in the order they came.
    private var run = 0
    private var setsInRun = 0

    /// Takes a GSV sentence of `epoch` into its set (one per talker and signal id). As in gpsd's processGSV,
    /// the sets of a run of GSV sentences (up to the next other sentence) replace those of the run before,
    /// and a SKY shows the sets as they were when the last set was complete (gpsd reports the sky view
    /// then), so a set cut short, by a lost sentence or a receiver dropping output, does not show half.
    mutating func add(_ s: NMEAGSV, startsRun: Bool, epoch: Int) {
        if startsRun && s.sentenceNumber <= 1 {
            for i in sets.indices {
                sets[i].receiving.removeAll(keepingCapacity: true)
                sets[i].lastSentence = 0
            }
            run += 1
            setsInRun = 0
        }
        let index = placeInRun(GSVSet.Key(talker: s.talker, signalID: s.signalID))
        // A set starts over at its first sentence, and at a sentence that does not follow the last one
        // taken: the Quectel LC79D sends a set's sentence 1 without a signal id and sentence 2 with one,
        // so the set keyed with the id never sees a sentence 1.
        if s.sentenceNumber <= 1 || s.sentenceNumber <= sets[index].lastSentence {
            sets[index].receiving.removeAll(keepingCapacity: true)
        }
        sets[index].lastSentence = s.sentenceNumber
        sets[index].receivingEpoch = epoch
        Self.appendSatellites(of: s, to: &sets[index].receiving)
        // The last sentence of a set: what the run has so far is what a SKY shows.
        if s.sentenceNumber >= s.sentenceCount {
            for i in sets.indices {
                sets[i].shown.removeAll(keepingCapacity: true)
                sets[i].shown.append(contentsOf: sets[i].receiving)
                sets[i].epoch = sets[i].receivingEpoch
            }
        }
    }

    /// The index of the set with `key`, made if new, placed in the order of this run (gpsd lists the
    /// satellites in the order they came): a set first sent in a later cycle, or sent in another place,
    /// moves to where it came.
    private mutating func placeInRun(_ key: GSVSet.Key) -> Int {
        var index: Int
        if let found = sets.firstIndex(where: { $0.key == key }) {
            index = found
        } else {
            sets.append(GSVSet(key: key))
            index = sets.count - 1
        }
        if sets[index].run != run {
            sets[index].run = run
            if index != setsInRun, setsInRun < sets.count {
                sets.insert(sets.remove(at: index), at: setsInRun)
                index = setsInRun
            }
            setsInRun += 1
        }
        return index
    }

    private static func appendSatellites(of s: NMEAGSV, to receiving: inout [SatelliteInView]) {
        let signal = ubxSignalID(nmea: s.signalID, talker: s.talker)
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
            receiving.append(entry)
        }
    }

    /// The satellites a SKY of `epoch` shows from the sets of the last `expiry` epochs, `used` marking
    /// the satellites the GSA sentences list.
    ///
    /// gpsd's SKY from NMEA 4.10+ GSV lists a satellite once per signal, each entry with its sigid, in the
    /// order the sentences came (one GSV set per talker and signal, sets in the order the receiver sends
    /// them), and counts entries in nSat and uSat. An entry is used when the GSA of its system lists the
    /// satellite and the entry has a signal (SNR above 0): GSA does not say which signals were used, so
    /// gpsd marks every received signal of a used satellite (driver_nmea0183.c processGSV). Entries
    /// without SNR, elevation or azimuth are kept. The same satellite and signal in two sets (one
    /// satellite in GP and GN sentences) is one entry, with the strongest SNR.
    func satellites(epoch: Int, expiry: Int, used: [UInt32]) -> [SatelliteInView] {
        var satellites: [SatelliteInView] = []
        var total = 0
        for set in sets where epoch - set.epoch <= expiry { total += set.shown.count }
        satellites.reserveCapacity(total)
        // System, svid and the set's NMEA signal id of each entry, to find the same satellite and signal.
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: max(1, total)) { keys in
            var count = 0
            for set in sets where epoch - set.epoch <= expiry {
                let signal = (UInt64(truncatingIfNeeded: (set.key.signalID ?? -1) &+ 1) & 0xFFFF_FFFF) << 32
                for var satellite in set.shown {
                    let key = signal | UInt64(satelliteKey(satellite.system, satellite.svid))
                    let isUsed = used.contains(satelliteKey(satellite.system, satellite.svid))
                    if let existing = keys[0..<count].firstIndex(of: key) {
                        if let ss = satellite.signalStrength, ss > (satellites[existing].signalStrength ?? -1) {
                            satellites[existing].signalStrength = ss
                            satellites[existing].used = isUsed && ss > 0
                        }
                        continue
                    }
                    satellite.used = isUsed && (satellite.signalStrength ?? 0) > 0
                    satellites.append(satellite)
                    keys[count] = key
                    count += 1
                }
            }
        }
        return satellites
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
}
