// The hardware one Receiver runs on, whoever provides it: the lines and openers its session uses,
// the link it reads, the clock its timers run on, and what ends with it. The system's is made from
// the board's description; a simulator's is a simulated hat. The Receiver never asks which.

/// The hardware of one board, opened for a `Receiver` (by a ``HardwareProvider``, or made by hand).
public protocol ReceiverHardware: Sendable {
    /// The board the hardware is.
    var board: Board { get }
    /// The GPIO lines, and the openers of serial ports and I2C buses, the session uses.
    var access: HardwareAccess { get }
    /// How the receiver's bytes are reached, as the session opens it and as it is reported (gpsd's
    /// DEVICE, `gnss-hat info`). It may change while the hardware lives (a simulated hat that comes
    /// back on a new pseudo-terminal), so the session reads it at every power-on.
    var link: HardwareLink { get }
    /// The clock of this hardware: the Receiver's linger, time-outs and pauses run on it.
    var clock: any Clock<Duration> { get }
    /// What the hardware is and the state of its lines and device, for bring-up (`gnss-hat power
    /// status`); `unavailable` says what could not be looked at.
    func status() -> HardwareStatus
    /// What the hardware shows after a power sequence was run on it by hand (`gnss-hat power on|off`),
    /// beyond the output lines read back: nothing for real hardware.
    func powerReport(afterPowerOn: Bool) async -> [String]
    /// Ends what was opened for the Receiver (a simulated hat's receiver and link); the Receiver that
    /// opened this hardware through a provider calls it once, from its own `shutdown()`.
    func shutdown() async
}

extension ReceiverHardware {
    public func powerReport(afterPowerOn: Bool) async -> [String] { [] }

    public func shutdown() async {}
}

/// What ``ReceiverHardware/status()`` found.
public struct HardwareStatus: Sendable {
    /// One line per fact, in the order to print them.
    public var lines: [String]
    /// Why some of it could not be looked at (a GPIO chip that cannot be opened), if anything.
    public var unavailable: (any Error & Sendable)?

    public init(lines: [String], unavailable: (any Error & Sendable)? = nil) {
        self.lines = lines
        self.unavailable = unavailable
    }
}

/// How a session reaches the receiver's bytes: a serial port or a u-blox DDC port on an I2C bus.
public enum HardwareLink: Sendable, Hashable, CustomStringConvertible {
    /// A UART (or a pseudo-terminal standing in for one): its path, speed, flow control, and whether
    /// the other common speeds are tried when the receiver does not answer at this one.
    case serial(Board.UART)
    /// A u-blox DDC port: bus and address.
    case i2c(Board.I2C)

    /// The device path: the serial port's, or the I2C bus's (`/dev/i2c-N`).
    public var path: String {
        switch self {
        case .serial(let uart): uart.path
        case .i2c(let i2c): i2c.path
        }
    }

    /// The serial speed in bits per second (nil for I2C).
    public var speed: Int? {
        switch self {
        case .serial(let uart): uart.baud
        case .i2c: nil
        }
    }

    public var description: String {
        switch self {
        case .serial(let uart): "UART \(uart.path) at \(uart.baud) baud"
        case .i2c(let i2c): "I2C bus \(i2c.bus) address 0x" + String(i2c.address, radix: 16)
        }
    }
}
