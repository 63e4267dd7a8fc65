// Little-endian reads from payloads and writes into byte arrays, shared by the binary codecs.

extension UnsafeRawBufferPointer {
    @inline(__always)
    func u8(_ offset: Int) -> UInt8 { self[offset] }
    @inline(__always)
    func i8(_ offset: Int) -> Int8 { Int8(bitPattern: self[offset]) }
    @inline(__always)
    func u16(_ offset: Int) -> UInt16 { UInt16(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self)) }
    @inline(__always)
    func i16(_ offset: Int) -> Int16 { Int16(bitPattern: u16(offset)) }
    @inline(__always)
    func u32(_ offset: Int) -> UInt32 { UInt32(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }
    @inline(__always)
    func i32(_ offset: Int) -> Int32 { Int32(bitPattern: u32(offset)) }
    @inline(__always)
    func u64(_ offset: Int) -> UInt64 { UInt64(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }

    /// A NUL-padded fixed-width character field as a `String` (stops at the first NUL). Bytes that are no
    /// UTF-8 become U+FFFD, three bytes each: the string is then cut at a character so that it still fits
    /// the field, and so encodes back into it as it is (found by the receiver fuzz target's round trip).
    func fixedString(_ offset: Int, _ width: Int) -> String {
        var end = offset
        while end < offset + width && self[end] != 0 { end += 1 }
        return String(decoding: UnsafeRawBufferPointer(rebasing: self[offset..<end]), as: UTF8.self)
            .fitting(utf8Width: width)
    }
}

/// Appends little-endian integers to a byte array (the encoders' builder).
struct LittleEndianWriter {
    var bytes: [UInt8]

    init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func i8(_ value: Int8) { bytes.append(UInt8(bitPattern: value)) }
    mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    }
    mutating func i16(_ value: Int16) { u16(UInt16(bitPattern: value)) }
    mutating func u32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }
    mutating func i32(_ value: Int32) { u32(UInt32(bitPattern: value)) }
    mutating func u64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
    mutating func zeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }
    /// A fixed-width character field, NUL-padded (and cut at a character to fit `width` bytes).
    mutating func fixedString(_ string: String, width: Int) {
        let utf8 = Array(string.fitting(utf8Width: width).utf8)
        bytes.append(contentsOf: utf8)
        zeros(width - utf8.count)
    }
}

extension String {
    /// The string, its last characters dropped until its UTF-8 is at most `width` bytes.
    func fitting(utf8Width width: Int) -> String {
        guard utf8.count > width else { return self }
        var cut = Substring(self)
        while cut.utf8.count > width { cut.removeLast() }
        return String(cut)
    }
}
