// Checksums of the three framings: NMEA's XOR, UBX's 8-bit Fletcher and RTCM3's CRC-24Q.

/// The NMEA 0183 checksum: XOR of every byte between `$` (or `!`) and `*`.
@inlinable
public func nmeaChecksum(_ bytes: UnsafeRawBufferPointer) -> UInt8 {
    var sum: UInt8 = 0
    for byte in bytes { sum ^= byte }
    return sum
}

/// The UBX checksum: 8-bit Fletcher over class, id, length and payload (`A += b; B += A`).
@inlinable
public func ubxChecksum(_ bytes: UnsafeRawBufferPointer) -> (a: UInt8, b: UInt8) {
    var a: UInt8 = 0
    var b: UInt8 = 0
    for byte in bytes {
        a &+= byte
        b &+= a
    }
    return (a, b)
}

/// CRC-24Q (polynomial 0x1864CFB, initial value 0), as used by RTCM 3 and SBAS.
public enum CRC24Q {
    @usableFromInline
    static let table: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 256)
        for index in 0..<256 {
            var crc = UInt32(index) << 16
            for _ in 0..<8 {
                crc <<= 1
                if crc & 0x100_0000 != 0 { crc ^= 0x186_4CFB }
            }
            table[index] = crc & 0xFF_FFFF
        }
        return table
    }()

    /// The 24-bit CRC of `bytes`.
    @inlinable
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        table.withUnsafeBufferPointer { table in
            var crc: UInt32 = 0
            for byte in bytes {
                crc = ((crc << 8) & 0xFF_FFFF) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 16) ^ byte)]
            }
            return crc
        }
    }
}

/// Convenience overloads over byte collections, for encoders and tests.
extension Collection<UInt8> {
    @usableFromInline
    func withRawBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let result = try withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return try Array(self).withUnsafeBytes(body)
    }
}

/// CRC-32 as IEEE 802.3, zlib and PNG compute it (reflected polynomial 0xEDB88320): the check of
/// GNSSHat's own files (the MQTT journal's records, the aiding state), not of any GNSS protocol.
public enum CRC32 {
    static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 != 0 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    /// The CRC-32 of `bytes`.
    public static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
