// What each NMEA sentence adds to the epoch in progress. A UBX solution in the same epoch is more
// precise: NMEA fills a position or velocity only while no UBX message has given one.

extension EpochAssembler {
    mutating func consumeNMEA<Sink: EpochSink>(_ sentence: NMEASentence, into sink: inout Sink) {
        let continuesGSVRun = gsv.inRun
        gsv.inRun = false
        switch sentence {
        case .gga(let s):
            participate(timed: s.time, key: MessageKey.nmea(s.talker, formatterGGA), into: &sink) { a in
                Self.take(s, into: &a)
            }
        case .rmc(let s):
            participate(timed: s.time, key: MessageKey.nmea(s.talker, formatterRMC), into: &sink) { a in
                Self.take(s, into: &a)
            }
        case .gll(let s):
            participate(timed: s.time, key: MessageKey.nmea(s.talker, formatterGLL), into: &sink) { a in
                Self.take(s, into: &a)
            }
        case .gns(let s):
            participate(timed: s.time, key: MessageKey.nmea(s.talker, formatterGNS), into: &sink) { a in
                Self.take(s, into: &a)
            }
        case .gst(let s):
            participate(timed: s.time, key: MessageKey.nmea(s.talker, formatterGST), into: &sink) { _ in }
        case .zda(let s):
            participate(timed: s.time, key: MessageKey.nmea(s.talker, formatterZDA), into: &sink) { a in
                a.hasFixData = true
                guard let time = s.time, let date = s.date else { return }
                a.timeOfDay = time
                a.date = date
            }
        case .vtg(let s):
            participate(key: MessageKey.nmea(s.talker, formatterVTG), tag: nil, into: &sink) { a in
                guard s.modeIndicator != "N", a.velocitySource == .nmea else { return }
                if let speed = s.speed { a.speed = speed }
                if let course = s.courseTrue { a.track = course }
            }
        case .gsa(let s):
            participate(key: MessageKey.nmea(s.talker, formatterGSA), tag: nil, into: &sink) { a in
                Self.take(s, into: &a)
            }
        case .gsv(let s):
            // A GSV key names the signal too: a multi-band receiver sends one set per signal, and a cycle
            // that ends with the talker's last set must not end at its first.
            let signal = UInt64(truncatingIfNeeded: (s.signalID ?? -1) &+ 1) & 0xFFFF
            let key =
                MessageKey.nmea(s.talker, formatterGSV) | signal << 40
                | (s.sentenceNumber >= s.sentenceCount ? 0 : MessageKey.midSetBit)
            // The satellites first: when this sentence ends the cycle, its epoch's SKY shows them.
            gsv.add(s, startsRun: !continuesGSVRun, epoch: epochCounter)
            gsv.inRun = true
            participate(key: key, tag: nil, into: &sink) { a in a.hasSkyData = true }
        case .txt, .pmtk, .proprietary, .unsupported:
            return
        }
    }

    /// `participate` for a sentence with a time of day: the time is its tag and its UTC time.
    private mutating func participate<Sink: EpochSink>(
        timed time: TimeOfDay?, key: UInt64, into sink: inout Sink, apply: (inout Accumulator) -> Void
    ) {
        let nanoseconds = time?.nanosecondsSinceMidnight
        participate(key: key, tag: nanoseconds.map { .nmea($0) }, utc: nanoseconds, into: &sink, apply: apply)
    }

    private static func take(_ s: NMEAGGA, into a: inout Accumulator) {
        a.hasFixData = true
        a.timeOfDay = s.time ?? a.timeOfDay
        a.ggaQuality = s.quality ?? 0
        a.satellitesUsed = s.satellitesUsed ?? a.satellitesUsed
        if let hdop = s.hdop, hdop < 99 { a.dops.horizontal = hdop }
        guard let quality = s.quality, quality > 0, let lat = s.latitude, let lon = s.longitude,
            a.positionSource == .nmea
        else { return }
        a.latitude = lat
        a.longitude = lon
        if let altitude = s.altitudeMSL { a.altitudeMSL = altitude }
        if let separation = s.geoidSeparation { a.geoidSeparation = separation }
        if let age = s.dgpsAge, let station = s.dgpsStation, age > 0.09 || station > 0 {
            a.dgpsAge = age
            a.dgpsStation = station
        }
        // Corrections used (DGNSS 2, RTK fixed 4, RTK float 5): their age and station as the receiver says.
        if [2, 4, 5].contains(quality) {
            a.correctionAge = s.dgpsAge
            a.referenceStation = s.dgpsStation
        }
    }

    private static func take(_ s: NMEARMC, into a: inout Accumulator) {
        a.hasFixData = true
        a.rmcValid = s.isValid
        guard s.isValid else { return }
        a.timeOfDay = s.time ?? a.timeOfDay
        if s.time != nil, let date = s.date { a.date = date }
        if let mode = s.modeIndicator { a.faaMode = mode }
        if let lat = s.latitude, let lon = s.longitude, a.positionSource == .nmea {
            a.latitude = lat
            a.longitude = lon
        }
        if a.velocitySource == .nmea {
            if let speed = s.speed { a.speed = speed }
            if let course = s.course { a.track = course }
        }
        if let variation = s.magneticVariation, abs(variation) > 0.09 { a.magneticVariation = variation }
    }

    private static func take(_ s: NMEAGLL, into a: inout Accumulator) {
        a.hasFixData = true
        let valid = s.status == "A" && s.modeIndicator != "N"
        a.gllValid = valid
        guard valid else { return }
        a.timeOfDay = s.time ?? a.timeOfDay
        if let lat = s.latitude, let lon = s.longitude, a.positionSource == .nmea {
            a.latitude = lat
            a.longitude = lon
        }
    }

    private static func take(_ s: NMEAGNS, into a: inout Accumulator) {
        a.hasFixData = true
        let mode = s.modeIndicators?.unicodeScalars.first
        let valid = mode != nil && mode != "N" && s.navigationStatus != "U" && s.navigationStatus != "V"
        a.gnsValid = valid
        guard valid else { return }
        a.timeOfDay = s.time ?? a.timeOfDay
        if let mode { a.faaMode = mode }
        if let lat = s.latitude, let lon = s.longitude, a.positionSource == .nmea {
            a.latitude = lat
            a.longitude = lon
            if let altitude = s.altitudeMSL { a.altitudeMSL = altitude }
            if let separation = s.geoidSeparation { a.geoidSeparation = separation }
        }
        if let hdop = s.hdop, hdop < 99 { a.dops.horizontal = hdop }
        a.satellitesUsed = s.satellitesUsed ?? a.satellitesUsed
    }

    private static func take(_ s: NMEAGSA, into a: inout Accumulator) {
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
}
