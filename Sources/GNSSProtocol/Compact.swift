// Optional fields of the NMEA sentence types, kept in the bytes of their value alone.
//
// A `Double?` takes 9 bytes and a stride of 16, a `TimeOfDay?` 33: a GGA of optional numbers was 185
// bytes, every `Message` 193. Messages are returned and passed by value, and copies that large are calls to
// `memcpy` (three in `Message(frame:)` alone), a fifth of the typed decoding pass. With `@Compact`, "absent"
// is a value the field cannot hold (a NaN payload, `Int.min`, an invalid scalar): the largest sentence is
// 120 bytes and a `Message` is copied in registers.

/// A value `@Compact` keeps in `Storage`, with one storage value left over for "absent".
public protocol CompactStorable: Hashable, Sendable {
    associatedtype Storage: Hashable & Sendable & BitwiseCopyable
    /// The storage of an absent value: no value of `Self` is stored as it.
    static var absentStorage: Storage { get }
    /// The stored form of `self`; never `absentStorage`.
    var compactStorage: Storage { get }
    /// The value stored as `storage` (never `absentStorage`).
    init(compactStorage: Storage)
}

/// An optional field stored in the size of its value (`@Compact public var latitude: Double?`). Equality
/// and hashing are those of the optional value, so `0.0` equals `-0.0` and NaN equals nothing, as for
/// `Double?`. What is kept exactly is said by each value's `CompactStorable` conformance.
@propertyWrapper
public struct Compact<Value: CompactStorable>: Hashable, Sendable {
    @usableFromInline var storage: Value.Storage

    @inlinable
    public init(wrappedValue: Value?) {
        storage = wrappedValue?.compactStorage ?? Value.absentStorage
    }

    @inlinable
    public var wrappedValue: Value? {
        get { storage == Value.absentStorage ? nil : Value(compactStorage: storage) }
        set { storage = newValue?.compactStorage ?? Value.absentStorage }
    }

    @inlinable
    public static func == (lhs: Compact, rhs: Compact) -> Bool { lhs.wrappedValue == rhs.wrappedValue }

    @inlinable
    public func hash(into hasher: inout Hasher) { hasher.combine(wrappedValue) }
}

/// Every value, NaN kept as the standard quiet NaN (its payload is not kept).
extension Double: CompactStorable {
    /// A signalling NaN with a payload; a NaN assigned is stored as `Double.nan`, never as this.
    @inlinable public static var absentStorage: UInt64 { 0x7FF4_0000_0000_0A5E }
    @inlinable public var compactStorage: UInt64 { isNaN ? Double.nan.bitPattern : bitPattern }
    @inlinable public init(compactStorage: UInt64) { self.init(bitPattern: compactStorage) }
}

/// Every value but `Int.min`, which is stored as absent (NMEA's integer fields read at most 18 digits).
extension Int: CompactStorable {
    @inlinable public static var absentStorage: Int { .min }
    @inlinable public var compactStorage: Int { self }
    @inlinable public init(compactStorage: Int) { self = compactStorage }
}

/// Every scalar (`0xFFFF_FFFF` is none).
extension Unicode.Scalar: CompactStorable {
    @inlinable public static var absentStorage: UInt32 { .max }
    @inlinable public var compactStorage: UInt32 { value }
    @inlinable public init(compactStorage: UInt32) { self = Unicode.Scalar(compactStorage) ?? "\u{FFFD}" }
}

/// Every time a sentence can carry: hour below 65,536, minute and second below 256, nanosecond below
/// 2^30 (the field holds at most 999,999,999); a component outside is clamped into that range.
extension TimeOfDay: CompactStorable {
    @inlinable public static var absentStorage: UInt64 { .max }

    @inlinable public var compactStorage: UInt64 {
        clampedBits(hour, 0xFFFF) << 46 | clampedBits(minute, 0xFF) << 38 | clampedBits(second, 0xFF) << 30
            | clampedBits(nanosecond, 0x3FFF_FFFF)
    }

    @inlinable public init(compactStorage: UInt64) {
        self.init(
            hour: Int(compactStorage >> 46 & 0xFFFF), minute: Int(compactStorage >> 38 & 0xFF),
            second: Int(compactStorage >> 30 & 0xFF), nanosecond: Int(compactStorage & 0x3FFF_FFFF))
    }
}

/// Every date with a year in `Int32`'s range and month and day below 256; a component outside is clamped.
extension GNSSDate: CompactStorable {
    @inlinable public static var absentStorage: UInt64 { .max }

    @inlinable public var compactStorage: UInt64 {
        UInt64(UInt32(bitPattern: Int32(clamping: year))) << 16 | clampedBits(month, 0xFF) << 8
            | clampedBits(day, 0xFF)
    }

    @inlinable public init(compactStorage: UInt64) {
        self.init(
            year: Int(Int32(bitPattern: UInt32(truncatingIfNeeded: compactStorage >> 16))),
            month: Int(compactStorage >> 8 & 0xFF), day: Int(compactStorage & 0xFF))
    }
}

/// `value` clamped to `0...limit`, as the bits of a packed field.
@usableFromInline @inline(__always)
func clampedBits(_ value: Int, _ limit: Int) -> UInt64 {
    UInt64(min(max(value, 0), limit))
}
