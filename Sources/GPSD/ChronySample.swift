// chrony's SOCK reference clock: chronyd binds a Unix datagram socket (`refclock SOCK PATH`) and reads
// one `struct sock_sample` per datagram (chrony refclock_sock.c); ChronyFeed sends them over
// LinuxSystem's DatagramSocket. The layout is spelt out here, field by field by C's rules, so that
// GPSD makes no C call; GPSDTests checks it byte for byte against the C declaration of the struct
// (`cshim_chrony_sample` in CLinuxShims).

/// One time sample for chrony: at system time `systemTime`, the true time was `offset` seconds later.
public struct ChronySample: Hashable, Sendable {
    /// System (`CLOCK_REALTIME`) time of the measurement, nanoseconds since the Unix epoch.
    public var systemTime: Int64
    /// True time minus system time at `systemTime`, seconds.
    public var offset: Double
    /// A pulse (PPS) sample, whose whole seconds chrony takes from another source.
    public var isPulse: Bool
    /// 0 no leap second, 1 insert one, 2 delete one (at the end of the UTC day).
    public var leap: Int32

    public init(systemTime: Int64, offset: Double, isPulse: Bool = false, leap: Int32 = 0) {
        self.systemTime = systemTime
        self.offset = offset
        self.isPulse = isPulse
        self.leap = leap
    }

    /// The datagram chrony reads: `struct sock_sample` in the platform's layout, magic included.
    public var datagram: [UInt8] {
        let seconds = systemTime >= 0 ? systemTime / 1_000_000_000 : (systemTime - 999_999_999) / 1_000_000_000
        let nanoseconds = systemTime - seconds * 1_000_000_000
        var bytes = [UInt8](repeating: 0, count: SockSample.size)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: CLong(truncatingIfNeeded: seconds), toByteOffset: SockSample.seconds, as: CLong.self)
            raw.storeBytes(of: CLong(truncatingIfNeeded: nanoseconds / 1000), toByteOffset: SockSample.microseconds,
                           as: CLong.self)
            raw.storeBytes(of: offset, toByteOffset: SockSample.offset, as: CDouble.self)
            raw.storeBytes(of: isPulse ? 1 : 0, toByteOffset: SockSample.pulse, as: CInt.self)
            raw.storeBytes(of: leap, toByteOffset: SockSample.leap, as: CInt.self)
            raw.storeBytes(of: SockSample.magicValue, toByteOffset: SockSample.magic, as: CInt.self)
        }
        return bytes
    }

    /// Reads a datagram in `struct sock_sample` layout (what a test standing in for chronyd receives),
    /// or `nil` when the size or the magic is wrong.
    public init?(datagram: [UInt8]) {
        guard datagram.count == SockSample.size else { return nil }
        let sample = datagram.withUnsafeBytes { raw -> ChronySample? in
            guard raw.loadUnaligned(fromByteOffset: SockSample.magic, as: CInt.self) == SockSample.magicValue else {
                return nil
            }
            let seconds = Int64(raw.loadUnaligned(fromByteOffset: SockSample.seconds, as: CLong.self))
            let microseconds = Int64(raw.loadUnaligned(fromByteOffset: SockSample.microseconds, as: CLong.self))
            return ChronySample(
                systemTime: seconds * 1_000_000_000 + microseconds * 1000,
                offset: raw.loadUnaligned(fromByteOffset: SockSample.offset, as: CDouble.self),
                isPulse: raw.loadUnaligned(fromByteOffset: SockSample.pulse, as: CInt.self) != 0,
                leap: raw.loadUnaligned(fromByteOffset: SockSample.leap, as: CInt.self))
        }
        guard let sample else { return nil }
        self = sample
    }
}

/// Where the fields of chrony's `struct sock_sample` lie: `struct timeval tv` (glibc's `time_t` and
/// `suseconds_t`, both a C `long`), `double offset`, then `int pulse, leap, _pad, magic`; each at the
/// next multiple of its alignment, the whole rounded up to the largest (40 bytes on 64-bit Linux).
enum SockSample {
    static let seconds = 0
    static let microseconds = MemoryLayout<CLong>.size
    static let offset = aligned(2 * MemoryLayout<CLong>.size, to: MemoryLayout<CDouble>.alignment)
    static let pulse = offset + MemoryLayout<CDouble>.size
    static let leap = pulse + MemoryLayout<CInt>.size
    static let padding = leap + MemoryLayout<CInt>.size
    static let magic = padding + MemoryLayout<CInt>.size
    static let size = aligned(
        magic + MemoryLayout<CInt>.size, to: max(MemoryLayout<CLong>.alignment, MemoryLayout<CDouble>.alignment))
    /// chrony's `SOCK_MAGIC`, "SOCK" in ASCII.
    static let magicValue = CInt(bitPattern: 0x534f_434b)

    private static func aligned(_ offset: Int, to alignment: Int) -> Int {
        (offset + alignment - 1) / alignment * alignment
    }
}
