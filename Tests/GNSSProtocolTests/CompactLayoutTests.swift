// The compact layout of decoded messages: `@Compact` fields keep what they promise, and a `Message` stays
// small enough to be copied in registers.

@testable import GNSSProtocol
import Testing

@Suite("Compact layout")
struct CompactLayoutTests {
    @Test("a Message fits in 128 bytes, so copies of it are register moves, not memcpy calls")
    func messageSize() {
        #expect(MemoryLayout<Message>.size <= 128)
        #expect(MemoryLayout<NMEASentence>.size <= 127)
        #expect(MemoryLayout<Compact<Double>>.size == 8)
        #expect(MemoryLayout<Compact<TimeOfDay>>.size == 8)
        #expect(MemoryLayout<Compact<Unicode.Scalar>>.size == 4)
    }

    @Test("Double: every value kept, NaN stays NaN, equality as Double?")
    func doubles() {
        for value: Double? in [nil, 0, -0.0, 1.5, -123.456, .infinity, -.infinity, .greatestFiniteMagnitude,
            .leastNonzeroMagnitude]
        {
            #expect(Compact(wrappedValue: value).wrappedValue == value)
        }
        #expect(Compact(wrappedValue: Double.nan).wrappedValue?.isNaN == true)
        #expect(Compact(wrappedValue: Double(bitPattern: Double.absentStorage)).wrappedValue?.isNaN == true)
        #expect(Compact(wrappedValue: 0.0) == Compact(wrappedValue: -0.0))
        #expect(Compact(wrappedValue: Double.nan) != Compact(wrappedValue: Double.nan))
        #expect(Compact<Double>(wrappedValue: nil) == Compact(wrappedValue: nil))
        #expect(Compact(wrappedValue: 1.0) != Compact(wrappedValue: nil))
    }

    @Test("Int, scalar, time and date: kept exactly in range, clamped outside, Int.min is absent")
    func others() {
        for value: Int? in [nil, 0, -1, 1_000_000_000_000_000_000, .max] {
            #expect(Compact(wrappedValue: value).wrappedValue == value)
        }
        #expect(Compact(wrappedValue: Int.min).wrappedValue == nil)
        for value: Unicode.Scalar? in [nil, "A", "\u{0}", "\u{10FFFF}"] {
            #expect(Compact(wrappedValue: value).wrappedValue == value)
        }
        let times: [TimeOfDay?] = [
            nil, TimeOfDay(hour: 0, minute: 0, second: 0), TimeOfDay(hour: 23, minute: 59, second: 60, nanosecond: 999_999_999),
        ]
        for time in times { #expect(Compact(wrappedValue: time).wrappedValue == time) }
        #expect(
            Compact(wrappedValue: TimeOfDay(hour: -1, minute: 300, second: 7, nanosecond: 2_000_000_000)).wrappedValue
                == TimeOfDay(hour: 0, minute: 255, second: 7, nanosecond: 0x3FFF_FFFF))
        for date: GNSSDate? in [nil, GNSSDate(year: 2026, month: 12, day: 4), GNSSDate(year: -5, month: 1, day: 31)] {
            #expect(Compact(wrappedValue: date).wrappedValue == date)
        }
    }

    @Test("a decoded sentence's fields read back as parsed")
    func decodedFields() throws {
        guard
            case .rmc(let rmc) = try nmea(
                "$GPRMC,225446.33,A,4916.45,N,12311.12,W,000.5,054.7,191194,020.3,E,A*2B")
        else { Issue.record("not RMC"); return }
        #expect(rmc.time == TimeOfDay(hour: 22, minute: 54, second: 46, nanosecond: 330_000_000))
        #expect(rmc.status == "A")
        #expect(rmc.date == GNSSDate(year: 1994, month: 11, day: 19))
        #expect(rmc.magneticVariation == 20.3)
        #expect(rmc.modeIndicator == "A")
        #expect(rmc.navigationStatus == nil)
        var changed = rmc
        changed.course = nil
        changed.modeIndicator = "D"
        #expect(changed.course == nil && changed.modeIndicator == "D" && changed != rmc)
    }
}
