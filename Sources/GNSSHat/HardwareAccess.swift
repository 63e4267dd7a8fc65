// How a Receiver reaches the hardware: GPIO lines, serial ports and I2C buses. The system's by
// default; tests and the simulator inject their own.
public import LinuxSystem
public import PiHardware

/// A serial link whose speed can be changed: a `SerialPort`, or a simulator's in-process link.
public protocol SerialLink: ByteLink {
    /// Changes the speed (raw 8N1 kept).
    func setSpeed(_ speed: Int) throws
    /// Drops bytes received but not read yet.
    func discardInput() throws
    /// Waits for bytes with no timeout, or until `waker` is woken (then returns none).
    func read(maxCount: Int, until waker: Waker) throws -> [UInt8]
    /// As ``read(maxCount:until:)``, the bytes left in `buffer` (empty when woken), reusing its
    /// storage when nothing else holds it: a read loop that passes the bytes on and gets them back
    /// allocates nothing per read.
    func read(into buffer: inout [UInt8], maxCount: Int, until waker: Waker) throws
    /// The host will read no more from this link: reading was stopped (a power-off follows, then
    /// `close()`) or a read failed (the stop comes later). A link that accounts for bytes in
    /// flight (the simulator's) stops expecting them to be read.
    func endReading()
    /// Whether the kernel keeps what arrives while the reader sleeps without waiting on the link (a
    /// tty's buffer does): the read loop then may pause through the middle of an epoch (``ReadPacer``).
    /// False for links that count bytes in flight or live on a simulated clock.
    var keepsBytesWhileReaderSleeps: Bool { get }
}

extension SerialLink {
    /// For links that cannot wait on a descriptor (test fakes, the simulator's in-process link):
    /// a read that gives up after 50 ms, so a woken reader notices within that time.
    public func read(maxCount: Int, until waker: Waker) throws -> [UInt8] {
        try read(maxCount: maxCount, timeout: .milliseconds(50))
    }

    /// A new array per read, for links without a read into a buffer of their own.
    public func read(into buffer: inout [UInt8], maxCount: Int, until waker: Waker) throws {
        buffer = try read(maxCount: maxCount, until: waker)
    }

    /// Nothing to do for a link that counts nothing: the kernel keeps what arrives.
    public func endReading() {}

    /// Read at once: a link of its own (a fake, the simulator's) says otherwise if it can.
    public var keepsBytesWhileReaderSleeps: Bool { false }
}

extension SerialPort: SerialLink {
    /// A tty: the line discipline holds 4 KiB, and the serial core more behind it.
    public var keepsBytesWhileReaderSleeps: Bool { true }
}

/// The hardware a `Receiver` uses.
public struct HardwareAccess: Sendable {
    /// The GPIO lines (power, standby, force-on, reset, EXTINT outputs; the PPS input).
    public var gpio: any GPIOLines
    /// Opens a serial port: path, speed, RTS/CTS.
    public var openSerial: @Sendable (_ path: String, _ speed: Int, _ rtsCts: Bool) throws -> any SerialLink
    /// Opens an I2C bus by number.
    public var openI2C: @Sendable (_ bus: Int) throws -> any I2CBus

    public init(
        gpio: any GPIOLines,
        openSerial: @escaping @Sendable (_ path: String, _ speed: Int, _ rtsCts: Bool) throws -> any SerialLink,
        openI2C: @escaping @Sendable (_ bus: Int) throws -> any I2CBus
    ) {
        self.gpio = gpio
        self.openSerial = openSerial
        self.openI2C = openI2C
    }

    /// The machine's own: libgpiod lines (consumer `gnss-hat`), termios serial ports, i2c-dev.
    public static func system(consumer: String = GPIOChip.defaultConsumer) -> HardwareAccess {
        HardwareAccess(
            gpio: SystemGPIO(consumer: consumer),
            openSerial: { path, speed, rtsCts in try SerialPort(path: path, speed: speed, rtsCts: rtsCts) },
            openI2C: { bus in try I2CAdapter(bus: bus) }
        )
    }
}
