// Where one navigation epoch ends and the next begins.
//
// NMEA sentences of an epoch share a time tag (hhmmss.ss), UBX NAV messages share iTOW; sentences without
// a tag (GSA, GSV, VTG) belong to the epoch they arrive in. A new tag closes the epoch. Like gpsd, the
// assembler also learns which message ends a cycle (the last one before the tag changed) and closes the
// epoch as soon as that message arrives, so a fix is out without waiting for the next epoch's first byte.

/// A message's time tag: what tells whether two messages of one protocol belong to the same epoch.
enum EpochTag {
    /// The NMEA time of day, ns since midnight.
    case nmea(Int64)
    /// The UBX iTOW, ms.
    case ubx(UInt32)
}

/// Names a message kind for learning the end of a cycle.
enum MessageKey {
    /// An NMEA sentence: its talker and formatter.
    static func nmea(_ talker: NMEATalker, _ formatter: UInt32) -> UInt64 {
        UInt64(talker.first) << 32 | UInt64(talker.second) << 24 | UInt64(formatter)
    }

    /// A UBX message: its class and id, with the top bit set so it never equals an NMEA key.
    static func ubx(_ id: UBX.MessageID) -> UInt64 {
        1 << 63 | UInt64(id.messageClass) << 8 | UInt64(id.id)
    }

    /// UBX-NAV-EOE (01 61): u-blox's own end-of-epoch marker (`ubx(01 61)`, written out so it stays a constant).
    static let endOfEpoch: UInt64 = 1 << 63 | 0x0161
    /// Marks the key of a GSV sentence that is not the last of its set: the end of a cycle is learnt only
    /// from a set's last sentence.
    static let midSetBit: UInt64 = 1 << 62
}

extension EpochAssembler {
    /// Starts, continues or closes epochs around a participating message; `apply` adds its data.
    /// `utc` is the message's UTC time of day (ns) when it has one: it lets an NMEA sentence and a UBX
    /// message, whose tags cannot be compared, tell whether they belong to the same epoch.
    mutating func participate<Sink: EpochSink>(
        key: UInt64, tag: EpochTag?, utc: Int64? = nil, into sink: inout Sink, apply: (inout Accumulator) -> Void
    ) {
        if let tag {
            let same = belongsToCurrent(tag, utc: utc)
            if current.emitted {
                if same == true {
                    // The learned end was wrong: the epoch goes on. Forget it and report again at the real end
                    // (with a provisional fix again on the way).
                    current.emitted = false
                    current.provisionalGiven = false
                    learnedEnd = nil
                } else {
                    current.reset()
                }
            } else if same == false {
                if options.learnCycleEnd {
                    // A cycle cut short in the middle of a GSV set (a receiver dropping output) teaches nothing.
                    learnedEnd = current.lastKey.flatMap { $0 & MessageKey.midSetBit == 0 ? $0 : nil }
                }
                sink.epochEnded(close())
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
        if key == MessageKey.endOfEpoch || (options.learnCycleEnd && key == learnedEnd) {
            sink.epochEnded(close())
            current.emitted = true
        }
    }

    /// A message with `tag` in the epoch in progress: `true` same epoch, `false` another, `nil` cannot tell
    /// (the first message of its protocol in the epoch, with no UTC time to compare).
    private func belongsToCurrent(_ tag: EpochTag, utc: Int64?) -> Bool? {
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
        return same
    }
}
