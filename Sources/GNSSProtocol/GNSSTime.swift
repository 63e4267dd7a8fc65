// Time types of the protocol layer. Foundation is not allowed here, so dates are plain civil values
// and instants are nanoseconds since the POSIX epoch (UTC, leap seconds not counted, like gpsd).

/// A UTC calendar date as a receiver reports it (proleptic Gregorian).
public struct GNSSDate: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int

    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// `nil` unless month and day exist in that year, and the year is one a receiver can report
    /// (1900-2200; `GNSSTime` spans 1678-2262).
    public init?(validYear year: Int, month: Int, day: Int) {
        guard (1900...2200).contains(year), (1...12).contains(month),
            day >= 1, day <= GNSSDate.daysIn(month: month, year: year)
        else { return nil }
        self.init(year: year, month: month, day: day)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 (negative before), after Howard Hinnant's `days_from_civil`.
    public var daysSinceEpoch: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The date `days` days after 1970-01-01 (Hinnant's `civil_from_days`).
    public init(daysSinceEpoch days: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        self.init(year: yoe + era * 400 + (month <= 2 ? 1 : 0), month: month, day: day)
    }

    public static func < (lhs: GNSSDate, rhs: GNSSDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    public var description: String {
        var bytes: [UInt8] = []
        ASCII.appendPadded(year, width: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        ASCII.appendPadded(month, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        ASCII.appendPadded(day, width: 2, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A UTC time of day as NMEA sentences carry it (`hhmmss.sss`); `second` may be 60 in a leap second.
public struct TimeOfDay: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var hour: Int
    public var minute: Int
    public var second: Int
    public var nanosecond: Int

    public init(hour: Int, minute: Int, second: Int, nanosecond: Int = 0) {
        self.hour = hour
        self.minute = minute
        self.second = second
        self.nanosecond = nanosecond
    }

    /// Nanoseconds since midnight (a leap second counts as the 86,400th second).
    public var nanosecondsSinceMidnight: Int64 {
        Int64((hour * 60 + minute) * 60 + second) * 1_000_000_000 + Int64(nanosecond)
    }

    public static func < (lhs: TimeOfDay, rhs: TimeOfDay) -> Bool {
        lhs.nanosecondsSinceMidnight < rhs.nanosecondsSinceMidnight
    }

    public var description: String {
        var bytes: [UInt8] = []
        ASCII.appendPadded(hour, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        ASCII.appendPadded(minute, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        ASCII.appendPadded(second, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "."))
        ASCII.appendPadded(nanosecond, width: 9, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// An instant in UTC: nanoseconds since 1970-01-01T00:00:00Z, leap seconds not counted (POSIX time).
public struct GNSSTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanosecondsSinceEpoch: Int64

    public init(nanosecondsSinceEpoch: Int64) {
        self.nanosecondsSinceEpoch = nanosecondsSinceEpoch
    }

    /// Combines a date and a time of day; a leap second (`second == 60`) folds into the next second.
    /// Dates outside 1678-2262 saturate at the ends of the range instead of trapping.
    public init(date: GNSSDate, time: TimeOfDay) {
        let seconds =
            Int64(date.daysSinceEpoch) * 86_400
            + Int64(time.hour * 3600 + time.minute * 60 + time.second)
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, overflow2) = scaled.addingReportingOverflow(Int64(time.nanosecond))
        if overflow || overflow2 {
            self.init(nanosecondsSinceEpoch: seconds < 0 ? .min : .max)
        } else {
            self.init(nanosecondsSinceEpoch: total)
        }
    }

    /// Seconds since the epoch, as a `Double` (for differences and rates).
    public var secondsSinceEpoch: Double { Double(nanosecondsSinceEpoch) / 1e9 }

    /// `self - other` in seconds.
    public func seconds(since other: GNSSTime) -> Double {
        Double(nanosecondsSinceEpoch &- other.nanosecondsSinceEpoch) / 1e9
    }

    public var date: GNSSDate { GNSSDate(daysSinceEpoch: Int(floorDiv(nanosecondsSinceEpoch, 86_400_000_000_000))) }

    public var timeOfDay: TimeOfDay {
        let ns = nanosecondsSinceEpoch - floorDiv(nanosecondsSinceEpoch, 86_400_000_000_000) * 86_400_000_000_000
        let seconds = Int(ns / 1_000_000_000)
        return TimeOfDay(
            hour: seconds / 3600, minute: seconds / 60 % 60, second: seconds % 60,
            nanosecond: Int(ns % 1_000_000_000))
    }

    public static func < (lhs: GNSSTime, rhs: GNSSTime) -> Bool {
        lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch
    }

    /// Appends ISO 8601 the way gpsd writes it: `2017-01-10T00:09:41.000Z`, rounded to the millisecond.
    public func appendISO8601(to bytes: inout [UInt8]) {
        // gpsd rounds to the nearest millisecond, carrying into the seconds.
        let (rounded, overflow) = nanosecondsSinceEpoch.addingReportingOverflow(500_000)
        let ms = floorDiv(overflow ? nanosecondsSinceEpoch : rounded, 1_000_000)
        let days = floorDiv(ms, 86_400_000)
        let msOfDay = Int(ms - days * 86_400_000)
        let date = GNSSDate(daysSinceEpoch: Int(days))
        ASCII.appendPadded(date.year, width: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        ASCII.appendPadded(date.month, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        ASCII.appendPadded(date.day, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "T"))
        let seconds = msOfDay / 1000
        ASCII.appendPadded(seconds / 3600, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        ASCII.appendPadded(seconds / 60 % 60, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        ASCII.appendPadded(seconds % 60, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "."))
        ASCII.appendPadded(msOfDay % 1000, width: 3, to: &bytes)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// Writes the 24 bytes of `appendISO8601` to `out`.
    public func writeISO8601(to out: UnsafeMutablePointer<UInt8>) {
        let (rounded, overflow) = nanosecondsSinceEpoch.addingReportingOverflow(500_000)
        let ms = floorDiv(overflow ? nanosecondsSinceEpoch : rounded, 1_000_000)
        let days = floorDiv(ms, 86_400_000)
        let msOfDay = Int(ms - days * 86_400_000)
        let date = GNSSDate(daysSinceEpoch: Int(days))
        let seconds = msOfDay / 1000
        func put(_ value: Int, _ width: Int, _ at: Int) {
            var value = abs(value)
            var index = at + width
            while index > at {
                index -= 1
                out[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10)
                value /= 10
            }
        }
        put(date.year, 4, 0)
        out[4] = UInt8(ascii: "-")
        put(date.month, 2, 5)
        out[7] = UInt8(ascii: "-")
        put(date.day, 2, 8)
        out[10] = UInt8(ascii: "T")
        put(seconds / 3600, 2, 11)
        out[13] = UInt8(ascii: ":")
        put(seconds / 60 % 60, 2, 14)
        out[16] = UInt8(ascii: ":")
        put(seconds % 60, 2, 17)
        out[19] = UInt8(ascii: ".")
        put(msOfDay % 1000, 3, 20)
        out[23] = UInt8(ascii: "Z")
    }

    /// ISO 8601 as gpsd writes it (millisecond precision, `Z`).
    public var iso8601: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        appendISO8601(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    public var description: String { iso8601 }
}

@inline(__always)
func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    let q = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
}
