// A fake I2C bus with a u-blox receiver's DDC port on it, glitches on demand.
public import GNSSHat  // UBloxDDC.defaultAddress, in a default argument
public import LinuxSystem
public import PiHardware

/// Test double for `I2CBus`: behaves like a u-blox DDC slave at one address.
///
/// A 1-byte write sets the register pointer; longer writes are data for the receiver and are
/// recorded in `received`. Reads start at the pointer: `0xFD`/`0xFE` give the byte count
/// (big-endian), then the pointer stays at `0xFF`, which streams the output queue and reads
/// `0xFF` when it is empty. `inject` queues the glitches real parts show.
public final class FakeUBloxI2C: I2CBus {
    /// A misbehaviour of the next transfers.
    public enum Glitch: Hashable, Sendable {
        /// The next count read has bit 15 set.
        case countBit15
        /// The next count read claims this many bytes, whatever is queued (127 and 32767 are
        /// seen on real parts).
        case bogusCount(UInt16)
        /// The next count read gives `0xFFFF`, as an idle bus does.
        case idleCount
        /// An `0xFF` byte turns up in the stream after this many more bytes (mid-frame noise).
        case insertFF(afterBytes: Int)
        /// The next transfer fails with this errno (`EREMOTEIO` NAK, `ETIMEDOUT` clock stretch…).
        case fail(Errno)
    }

    public let name: String
    /// The address the fake receiver answers at.
    public let address: UInt16

    private struct State {
        var output: [UInt8] = []
        var received: [[UInt8]] = []
        var transfers: [[I2CSegment]] = []
        var pointer: UInt8 = 0xFF
        var glitches: [Glitch] = []
        var ffAfter: Int?
        var countOverride: UInt16?
    }

    private let state = Lock(State())

    public init(name: String = "/dev/i2c-fake", address: UInt16 = UBloxDDC.defaultAddress) {
        self.name = name
        self.address = address
    }

    /// Queues bytes the receiver sends (NMEA, UBX).
    public func enqueue(_ bytes: [UInt8]) {
        state.withLock { $0.output += bytes }
    }

    /// Queues a glitch for the coming transfers.
    public func inject(_ glitch: Glitch) {
        state.withLock { $0.glitches.append(glitch) }
    }

    /// Bytes queued but not read yet.
    public var pending: Int { state.withLock { $0.output.count } }

    /// The data writes the receiver got (register-pointer writes left out), one per transfer.
    public var received: [[UInt8]] { state.withLock { $0.received } }

    /// Every transfer, as sent.
    public var transfers: [[I2CSegment]] { state.withLock { $0.transfers } }

    public func transfer(address: UInt16, _ segments: [I2CSegment]) throws(I2CError) -> [[UInt8]] {
        try state.withLock { state throws(I2CError) -> [[UInt8]] in
            state.transfers.append(segments)
            if let index = state.glitches.firstIndex(where: { if case .fail = $0 { true } else { false } }),
                case .fail(let errno) = state.glitches.remove(at: index)
            {
                throw I2CError(FailedCall(call: "ioctl(I2C_RDWR)", device: name, errno: errno))
            }
            guard address == self.address else {
                // The Pi's controller reports an unanswered address as a NAK (EREMOTEIO).
                throw I2CError(FailedCall(call: "ioctl(I2C_RDWR)", device: name, errno: .remoteIO))
            }
            var reads: [[UInt8]] = []
            for segment in segments {
                switch segment {
                case .write(let bytes) where bytes.count == 1:
                    state.pointer = bytes[0]
                case .write(let bytes):
                    state.received.append(bytes)
                case .read(let count):
                    reads.append((0..<count).map { _ in Self.readByte(&state) })
                }
            }
            return reads
        }
    }

    private static func readByte(_ state: inout State) -> UInt8 {
        switch state.pointer {
        case 0xFD:
            state.pointer = 0xFE
            return UInt8(count(&state) >> 8)
        case 0xFE:
            state.pointer = 0xFF
            return UInt8(count(&state) & 0xFF)
        case 0xFF:
            if let after = state.ffAfter {
                if after == 0 {
                    state.ffAfter = nil
                    return 0xFF
                }
                state.ffAfter = after - 1
            } else if let index = state.glitches.firstIndex(where: {
                if case .insertFF = $0 { true } else { false }
            }), case .insertFF(let after) = state.glitches.remove(at: index) {
                state.ffAfter = after
                return readByte(&state)
            }
            return state.output.isEmpty ? 0xFF : state.output.removeFirst()
        default:
            state.pointer &+= 1
            return 0
        }
    }

    /// The count register's value; a glitch applies to both halves of one count read, so it is
    /// taken when the high byte is read and kept for the low byte.
    private static func count(_ state: inout State) -> UInt16 {
        if state.pointer == 0xFE, let index = state.glitches.firstIndex(where: Self.isCountGlitch) {
            let glitch = state.glitches.remove(at: index)
            state.countOverride = switch glitch {
            case .countBit15: UInt16(min(state.output.count, 0x7FFF)) | 0x8000
            case .bogusCount(let value): value
            case .idleCount: 0xFFFF
            default: nil
            }
        }
        let value = state.countOverride ?? UInt16(min(state.output.count, 0x7FFF))
        if state.pointer == 0xFF { state.countOverride = nil }
        return value
    }

    private static func isCountGlitch(_ glitch: Glitch) -> Bool {
        switch glitch {
        case .countBit15, .bogusCount, .idleCount: true
        default: false
        }
    }
}
