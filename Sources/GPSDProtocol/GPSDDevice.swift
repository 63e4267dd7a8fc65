// The device a gpsd service reports: what its DEVICE and DEVICES objects say.

/// The device as DEVICE objects describe it (gpsd's `struct devconfig_t`).
public struct GPSDDevice: Hashable, Sendable {
    /// The device path clients name in `?WATCH={"device":...}` (a serial port, an I2C bus).
    public var path: String
    /// The driver name, e.g. `u-blox` or `NMEA0183`.
    public var driver: String?
    /// Firmware or model, e.g. from u-blox MON-VER.
    public var subtype: String?
    /// Serial speed; `nil` for a link without one (I2C).
    public var bps: Int?
    public var parity: String
    public var stopbits: Int
    /// Seconds per navigation solution.
    public var cycle: Double
    /// The shortest cycle the receiver supports, when known.
    public var minimumCycle: Double?
    /// gpsd's `native`: 0 NMEA mode, 1 the chip's binary protocol.
    public var native: Int
    /// Whether the board delivers PPS edges (PPS and TOFF objects, chrony's PPS samples).
    public var hasPPS: Bool

    public init(
        path: String, driver: String? = nil, subtype: String? = nil, bps: Int? = nil, parity: String = "N",
        stopbits: Int = 1, cycle: Double = 1, minimumCycle: Double? = nil, native: Int = 0, hasPPS: Bool = false
    ) {
        self.path = path
        self.driver = driver
        self.subtype = subtype
        self.bps = bps
        self.parity = parity
        self.stopbits = stopbits
        self.cycle = cycle
        self.minimumCycle = minimumCycle
        self.native = native
        self.hasPPS = hasPPS
    }
}
