// An I2C bus through i2c-dev: combined transfers with the I2C_RDWR ioctl.
internal import CI2C
internal import Glibc
internal import LinuxSystem

/// One segment of a combined I2C transfer; each starts with a (repeated) START.
public enum I2CSegment: Hashable, Sendable {
    /// Writes these bytes.
    case write([UInt8])
    /// Reads this many bytes.
    case read(Int)
}

/// An I2C bus the u-blox DDC layer (and test doubles) can send transfers over.
public protocol I2CBus: AnyObject, Sendable {
    /// The bus, for errors and logs (e.g. `/dev/i2c-1`).
    var name: String { get }

    /// Sends `segments` to the device at 7-bit `address` as one combined transfer (one STOP at
    /// the end) and returns the bytes of each `.read` segment, in order.
    func transfer(address: UInt16, _ segments: [I2CSegment]) throws(I2CError) -> [[UInt8]]

    /// Whether a device acknowledges the 7-bit `address`. Nothing answering (`ENXIO`, a NAK) is
    /// `false`; any other failure throws.
    func probe(address: UInt16) throws(I2CError) -> Bool
}

extension I2CBus {
    /// Writes `bytes`, then (repeated START) reads `count` bytes: one register read.
    public func writeRead(address: UInt16, _ bytes: [UInt8], readCount count: Int) throws(I2CError) -> [UInt8] {
        try transfer(address: address, [.write(bytes), .read(count)]).first ?? []
    }

    /// Writes `bytes` in one transfer.
    public func write(address: UInt16, _ bytes: [UInt8]) throws(I2CError) {
        _ = try transfer(address: address, [.write(bytes)])
    }

    /// Reads `count` bytes in one transfer.
    public func read(address: UInt16, count: Int) throws(I2CError) -> [UInt8] {
        try transfer(address: address, [.read(count)]).first ?? []
    }

    /// The default probe: a one-byte read, as `i2cdetect -r` does (test doubles use this one).
    public func probe(address: UInt16) throws(I2CError) -> Bool {
        do {
            _ = try read(address: address, count: 1)
            return true
        } catch {
            switch error {
            case .noDevice, .nak: return false
            default: throw error
            }
        }
    }
}

/// A Linux I2C adapter, `/dev/i2c-N` (i2c-dev), driven with the `I2C_RDWR` ioctl rather than
/// SMBus calls, whose block transfers stop at 32 bytes.
public final class I2CAdapter: I2CBus {
    /// At most this many segments in one transfer (`I2C_RDWR_IOCTL_MAX_MSGS`).
    public static let maxSegments = Int(I2C_RDWR_IOCTL_MAX_MSGS)
    /// At most this many bytes in one segment (i2c-dev's limit).
    public static let maxSegmentLength = 8192

    /// The device path, e.g. `/dev/i2c-1`.
    public let path: String
    public var name: String { path }

    private let descriptor: Lock<CInt>

    /// Opens `/dev/i2c-<bus>` (`open`).
    public convenience init(bus: Int) throws(I2CError) {
        try self.init(path: "/dev/i2c-\(bus)")
    }

    /// Opens an i2c-dev device (`open` with `O_RDWR | O_CLOEXEC`).
    public init(path: String) throws(I2CError) {
        switch retryingInterrupts("open", path, { system_open(path, O_RDWR | O_CLOEXEC) }) {
        case .success(let fd): descriptor = Lock(fd)
        case .failure(let failure): throw I2CError(failure)
        }
        self.path = path
    }

    deinit { close() }

    /// Closes the bus (`close`). Closing twice does nothing.
    public func close() {
        descriptor.withLock { fd in
            if fd >= 0 { _ = system_close(fd, path) }
            fd = -1
        }
    }

    /// One combined transfer through `ioctl(I2C_RDWR)`. The bus is locked for the whole
    /// transfer, so transfers from several threads do not interleave.
    public func transfer(address: UInt16, _ segments: [I2CSegment]) throws(I2CError) -> [[UInt8]] {
        try validate(address: address, segments)
        return try descriptor.withLock { fd throws(I2CError) -> [[UInt8]] in
            guard fd >= 0 else { throw .closed(device: path) }
            return try perform(fd, address: address, segments)
        }
    }

    /// Whether a device acknowledges `address`: `ioctl(I2C_SLAVE)` selects it, then libi2c's
    /// `i2c_smbus_write_quick` sends just the address with the write bit, as `i2cdetect -q` does.
    /// A u-blox receiver acknowledges it without side effects. `EBUSY` from `I2C_SLAVE` (a kernel
    /// driver holds the address) throws `.failed` with that errno.
    public func probe(address: UInt16) throws(I2CError) -> Bool {
        guard address <= 0x7F else { throw .invalidTransfer("address \(address) is not a 7-bit address", device: path) }
        return try descriptor.withLock { fd throws(I2CError) -> Bool in
            guard fd >= 0 else { throw .closed(device: path) }
            let path = self.path
            // I2C_SLAVE takes the address itself as the argument, not a pointer to it.
            let select = retryingInterrupts(.ioctl("I2C_SLAVE"), path) {
                system_ioctl(fd, UInt(I2C_SLAVE), UnsafeMutableRawPointer(bitPattern: UInt(address)),
                             .ioctl("I2C_SLAVE"), path)
            }
            if case .failure(let failure) = select { throw I2CError(failure) }
            switch retryingInterrupts("i2c_smbus_write_quick", path, {
                system_smbus_write_quick(fd, UInt8(I2C_SMBUS_WRITE), path)
            }) {
            case .success: return true
            case .failure(let failure):
                switch I2CError(failure) {
                case .noDevice, .nak: return false
                case let error: throw error
                }
            }
        }
    }

    private func validate(address: UInt16, _ segments: [I2CSegment]) throws(I2CError) {
        guard address <= 0x7F else { throw .invalidTransfer("address \(address) is not a 7-bit address", device: path) }
        guard !segments.isEmpty else { throw .invalidTransfer("no segments", device: path) }
        guard segments.count <= Self.maxSegments else {
            throw .invalidTransfer("\(segments.count) segments, at most \(Self.maxSegments)", device: path)
        }
        for segment in segments {
            let length = switch segment {
            case .write(let bytes): bytes.count
            case .read(let count): count
            }
            guard length >= 1 && length <= Self.maxSegmentLength else {
                throw .invalidTransfer("segment of \(length) bytes, 1...\(Self.maxSegmentLength) allowed", device: path)
            }
        }
    }

    private func perform(_ fd: CInt, address: UInt16, _ segments: [I2CSegment]) throws(I2CError) -> [[UInt8]] {
        let lengths = segments.map { segment in
            switch segment {
            case .write(let bytes): bytes.count
            case .read(let count): count
            }
        }
        let total = lengths.reduce(0, +)
        // One buffer holds every segment's bytes; the messages point into it.
        let storage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: total)
        defer { storage.deallocate() }
        storage.initialize(repeating: 0)
        var messages: [i2c_msg] = []
        messages.reserveCapacity(segments.count)
        var offset = 0
        for (segment, length) in zip(segments, lengths) {
            let pointer = storage.baseAddress.map { $0 + offset }
            switch segment {
            case .write(let bytes):
                _ = UnsafeMutableBufferPointer(rebasing: storage[offset..<offset + length]).initialize(from: bytes)
                messages.append(i2c_msg(addr: address, flags: 0, len: UInt16(length), buf: pointer))
            case .read:
                messages.append(i2c_msg(addr: address, flags: UInt16(I2C_M_RD), len: UInt16(length), buf: pointer))
            }
            offset += length
        }
        let path = self.path
        let result = messages.withUnsafeMutableBufferPointer { msgs in
            var data = i2c_rdwr_ioctl_data(msgs: msgs.baseAddress, nmsgs: UInt32(msgs.count))
            return retryingInterrupts(.ioctl("I2C_RDWR"), path) {
                system_ioctl(fd, UInt(I2C_RDWR), &data, .ioctl("I2C_RDWR"), path)
            }
        }
        if case .failure(let failure) = result { throw I2CError(failure) }
        var reads: [[UInt8]] = []
        offset = 0
        for (segment, length) in zip(segments, lengths) {
            if case .read = segment { reads.append(Array(storage[offset..<offset + length])) }
            offset += length
        }
        return reads
    }
}

// MARK: - The seam's libi2c call

/// `i2c_smbus_write_quick(3)` (libi2c): one SMBus quick command, the address and a read/write bit.
/// Returns 0 or a negative errno (libi2c's convention); the seam turns that into -1 and `errno`.
func system_smbus_write_quick(_ fd: CInt, _ value: UInt8, _ device: String) -> CInt {
    if let errno = seamEnter("i2c_smbus_write_quick", device) { return failC(errno) }
    let result = i2c_smbus_write_quick(fd, value)
    if result < 0 { return failC(Errno(rawValue: -result)) }
    return result
}
