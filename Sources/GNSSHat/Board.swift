// A hat described as data: what chip it carries, how it is linked, which GPIO lines do what, how
// its power is switched, and what it draws. Loaded from `boards/*.json` (see BoardLoading.swift).
public import PiHardware

/// A GNSS hat (or breakout wiring), as a board file describes it.
public struct Board: Sendable, Hashable {
    /// The receiver chip's family: it decides the protocol and the software power commands.
    public enum ChipFamily: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// u-blox 8 / M8 (protocol 15–23): CFG-MSG and CFG-RATE.
        case ubloxGen8 = "ublox-gen8"
        /// u-blox 9 (ZED-F9P, ZED-F9R; protocol 27+): CFG-VALSET.
        case ubloxGen9 = "ublox-gen9"
        /// u-blox M10 (protocol 34+): CFG-VALSET.
        case ubloxM10 = "ublox-m10"
        /// MediaTek MT3339 and relatives (Quectel L76, L80): NMEA with `$PMTK` commands.
        case mtk = "mtk"

        public var isUBlox: Bool { self != .mtk }

        public var description: String { rawValue }
    }

    /// The chip.
    public struct Chip: Sendable, Hashable {
        public var family: ChipFamily
        /// The module, e.g. `MAX-M8Q`, if known.
        public var model: String?

        public init(family: ChipFamily, model: String? = nil) {
            self.family = family
            self.model = model
        }
    }

    /// A serial (UART) link.
    public struct UART: Sendable, Hashable {
        /// The device, e.g. `/dev/serial0`.
        public var path: String
        /// The speed the receiver is expected at.
        public var baud: Int
        /// RTS/CTS flow control.
        public var rtsCts: Bool
        /// When the configured speed yields no valid frame, try the other common speeds.
        public var detectSpeed: Bool

        public init(path: String, baud: Int, rtsCts: Bool = false, detectSpeed: Bool = true) {
            self.path = path
            self.baud = baud
            self.rtsCts = rtsCts
            self.detectSpeed = detectSpeed
        }
    }

    /// A u-blox DDC (I2C) link.
    public struct I2C: Sendable, Hashable {
        /// The bus number (`/dev/i2c-N`).
        public var bus: Int
        /// The receiver's 7-bit address (0x42 for u-blox).
        public var address: UInt16

        public init(bus: Int, address: UInt16 = 0x42) {
            self.bus = bus
            self.address = address
        }

        /// The bus device path.
        public var path: String { "/dev/i2c-\(bus)" }
    }

    /// How the receiver's bytes reach the host.
    public enum Link: Sendable, Hashable, CustomStringConvertible {
        case uart(UART)
        case i2c(I2C)
        /// A simulated receiver, at this speed (GNSSHatSimulator's provider opens it, on a
        /// pseudo-terminal).
        case simulator(baud: Int)

        /// The link as the machine's own hardware opens it: a UART or an I2C bus; nil for a
        /// simulated receiver, which only a simulator's ``HardwareProvider`` opens.
        public var systemLink: HardwareLink? {
            switch self {
            case .uart(let uart): .serial(uart)
            case .i2c(let i2c): .i2c(i2c)
            case .simulator: nil
            }
        }

        public var description: String {
            switch self {
            case .uart(let uart): HardwareLink.serial(uart).description
            case .i2c(let i2c): HardwareLink.i2c(i2c).description
            case .simulator(let baud): "simulated receiver (pseudo-terminal at \(baud) baud)"
            }
        }
    }

    /// A GPIO line and its active level.
    public struct Line: Sendable, Hashable, CustomStringConvertible {
        /// The line: a BCM number on a Pi, or a line name.
        public var line: GPIOLineSelector
        /// Whether the line's function is asserted at the low level.
        public var activeLow: Bool

        public init(_ line: GPIOLineSelector, activeLow: Bool = false) {
            self.line = line
            self.activeLow = activeLow
        }

        public var description: String { "\(line) (active \(activeLow ? "low" : "high"))" }
    }

    /// The GPIO chip and the lines wired to the receiver.
    public struct GPIO: Sendable, Hashable {
        /// The chip: `auto` finds the Pi's header chip by label.
        public var chip: GPIOChipSelector
        /// Switches the receiver's supply (a load switch or the module's enable pin); active = on.
        public var enable: Line?
        /// Puts the receiver in standby; active = standby (Waveshare L76X: STANDBY, low = standby).
        public var standby: Line?
        /// Pulsed to leave backup mode (Quectel FORCE_ON); active = pulse.
        public var forceOn: Line?
        /// How long the force-on pulse lasts.
        public var forceOnPulse: Duration
        /// Holds the receiver in reset; active = reset.
        public var reset: Line?
        /// The receiver's time pulse.
        public var pps: Line?
        /// The receiver's EXTINT input (u-blox wake-up from backup); active = wake pulse.
        public var extint: Line?
        /// How long the EXTINT wake-up pulse lasts.
        public var extintPulse: Duration

        public init(
            chip: GPIOChipSelector = .automatic, enable: Line? = nil, standby: Line? = nil, forceOn: Line? = nil,
            forceOnPulse: Duration = .seconds(1), reset: Line? = nil, pps: Line? = nil, extint: Line? = nil,
            extintPulse: Duration = .milliseconds(100)
        ) {
            self.chip = chip
            self.enable = enable
            self.standby = standby
            self.forceOn = forceOn
            self.forceOnPulse = forceOnPulse
            self.reset = reset
            self.pps = pps
            self.extint = extint
            self.extintPulse = extintPulse
        }

        /// The address of one of the lines on this chip.
        public func address(_ line: Line) -> GPIOLineAddress {
            GPIOLineAddress(chip: chip, line: line.line)
        }
    }

    /// A way to switch the receiver on and off. A board lists several in order: power-on runs
    /// them in that order, power-off in the reverse order.
    public enum PowerStrategy: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// The GPIO enable line (hard power): off cuts the supply.
        case gpioEnable = "gpio-enable"
        /// The standby line: asserted while off.
        case standbyLine = "standby-line"
        /// The force-on pulse to leave (perpetual) backup at power-on.
        case forceOnPulse = "force-on-pulse"
        /// u-blox backup through RXM-PMREQ, woken by UART traffic or an EXTINT pulse.
        case ubloxBackup = "ublox-backup"
        /// u-blox GNSS stop / start through CFG-RST (the interface stays up).
        case ubloxGNSSStop = "ublox-gnss-stop"
        /// MTK standby through `$PMTK161,0`, woken by any UART byte.
        case mtkStandby = "mtk-standby"

        public var description: String { rawValue }
    }

    /// Power control and timing.
    public struct Power: Sendable, Hashable {
        /// The strategies, in power-on order.
        public var strategies: [PowerStrategy]
        /// How long to wait after switching the supply on before expecting output.
        public var onWait: Duration
        /// How long to wait for the receiver to show it is up (a valid frame, a boot message).
        public var upTimeout: Duration
        /// How long the receiver stays on after the last subscriber leaves.
        public var linger: Duration
        /// The shortest time off between a power-off and the next power-on.
        public var minimumOffTime: Duration
        /// Whether the receiver keeps its backup RAM (ephemeris, almanac, time, position) while off: true
        /// when a backup supply (V_BCKP from a supercap, a coin cell or the Pi) stays up, or the off state
        /// is a software one; false when power-off cuts every supply, so the receiver starts cold unless
        /// GNSSHat saves and restores its aiding state (board files' `offKeepsBackup`).
        public var offKeepsBackup: Bool

        public init(
            strategies: [PowerStrategy], onWait: Duration = .milliseconds(500), upTimeout: Duration = .seconds(3),
            linger: Duration = .seconds(10), minimumOffTime: Duration = .zero, offKeepsBackup: Bool = true
        ) {
            self.strategies = strategies
            self.onWait = onWait
            self.upTimeout = upTimeout
            self.linger = linger
            self.minimumOffTime = minimumOffTime
            self.offKeepsBackup = offKeepsBackup
        }
    }

    /// Configuration sent on every power-on.
    public struct Configuration: Sendable, Hashable {
        /// Whether to configure at all (off: read-only, NMEA as the receiver sends it).
        public var enabled: Bool
        /// The navigation (measurement) period.
        public var period: Duration
        /// How long to wait for an acknowledgement.
        public var ackTimeout: Duration
        /// How many times a command is sent before giving up.
        public var attempts: Int

        public init(enabled: Bool = true, period: Duration = .seconds(1), ackTimeout: Duration = .seconds(1),
                    attempts: Int = 3) {
            self.enabled = enabled
            self.period = period
            self.ackTimeout = ackTimeout
            self.attempts = attempts
        }
    }

    /// Supply current figures, in milliamperes, where known (`nil`: not known).
    public struct Current: Sendable, Hashable {
        /// The supply voltage the figures are given at.
        public var volts: Double
        /// Acquiring (searching for satellites, before the first fix).
        public var acquisition: Double?
        /// Tracking (with a fix).
        public var tracking: Double?
        /// A cyclic power-save mode, for reference.
        public var powerSave: Double?
        /// Standby (MTK PMTK161, standby line) or GNSS stopped (u-blox CFG-RST).
        public var standby: Double?
        /// Backup (u-blox RXM-PMREQ, MTK perpetual backup), or what the backup supply draws
        /// while the main supply is cut.
        public var backup: Double?

        public init(volts: Double = 3.3, acquisition: Double? = nil, tracking: Double? = nil,
                    powerSave: Double? = nil, standby: Double? = nil, backup: Double? = nil) {
            self.volts = volts
            self.acquisition = acquisition
            self.tracking = tracking
            self.powerSave = powerSave
            self.standby = standby
            self.backup = backup
        }
    }

    /// RTK corrections: whether the receiver takes RTCM 3 on its link, and from which accuracy on a
    /// demand needs them (board files' `corrections` section).
    public struct Corrections: Sendable, Hashable {
        /// The accuracy below which a demand needs RTK when the board file says none: 0.5 m (a
        /// code-only receiver's fix is seldom better than a metre; float RTK gives decimetres).
        public static let defaultRTKAccuracy = 0.5

        /// Whether the receiver takes RTCM 3 corrections on the link the board uses (u-blox ZED-F9P and
        /// ZED-F9R, Quectel LC29H(DA/BA): yes; u-blox M8 and M10 modules without RTK: no).
        public var rtcm3: Bool
        /// A demand whose horizontal accuracy is this many metres or better needs RTK corrections.
        public var rtkAccuracy: Double
        /// The typical time from the first fix to an RTK fixed solution while corrections flow, before
        /// one has been measured on this receiver (the duty cycle powers on this much earlier). No
        /// vendor publishes one; nil: ``defaultTimeToRTKFixed``.
        public var typicalTimeToFixed: Duration?

        /// The planner's assumption when neither the board nor a measurement says (an assumption, not
        /// a published figure: see docs/ntrip.md).
        public static let defaultTimeToRTKFixed: Duration = .seconds(60)

        public init(rtcm3: Bool = false, rtkAccuracy: Double = Corrections.defaultRTKAccuracy,
                    typicalTimeToFixed: Duration? = nil) {
            self.rtcm3 = rtcm3
            self.rtkAccuracy = rtkAccuracy
            self.typicalTimeToFixed = typicalTimeToFixed
        }

        /// Whether a subscriber asking for `accuracy` metres needs RTK corrections on this board.
        public func needsRTK(accuracy: Double?) -> Bool {
            guard rtcm3, let accuracy else { return false }
            return accuracy <= rtkAccuracy
        }
    }

    /// How the built-in simulated receiver behaves (simulator boards only).
    public struct Simulation: Sendable, Hashable {
        /// Time to first fix without backup data (cold start).
        public var coldStart: Duration
        /// Time to first fix with ephemeris kept in backup RAM (hot start).
        public var hotStart: Duration
        /// Time from power to the first output.
        public var boot: Duration
        /// Whether a backup supply keeps ephemeris while the main supply is cut.
        public var backupSupply: Bool
        /// Where the scripted trajectory starts (degrees, metres above MSL).
        public var latitude: Double
        public var longitude: Double
        public var altitude: Double
        /// Ground speed (m/s) and course (degrees true) of the scripted trajectory.
        public var speed: Double
        public var course: Double
        /// With RTCM 3 corrections flowing (a station position and observations): how long until RTK
        /// float, and until RTK fixed, from the first usable corrections (an assumption: no vendor
        /// publishes a time to fixed; see docs/ntrip.md).
        public var rtkFloat: Duration
        public var rtkFixed: Duration

        public init(
            coldStart: Duration = .seconds(30), hotStart: Duration = .seconds(1), boot: Duration = .milliseconds(300),
            backupSupply: Bool = true, latitude: Double = 51.4779, longitude: Double = -0.0015, altitude: Double = 45,
            speed: Double = 1.4, course: Double = 90, rtkFloat: Duration = .seconds(5),
            rtkFixed: Duration = .seconds(30)
        ) {
            self.rtkFloat = rtkFloat
            self.rtkFixed = rtkFixed
            self.coldStart = coldStart
            self.hotStart = hotStart
            self.boot = boot
            self.backupSupply = backupSupply
            self.latitude = latitude
            self.longitude = longitude
            self.altitude = altitude
            self.speed = speed
            self.course = course
        }
    }

    /// The board's name, as given on the command line (`uputronics-gps-rtc`).
    public var name: String
    /// The product's name (`Uputronics GPS/RTC HAT`).
    public var title: String
    public var chip: Chip
    public var link: Link
    public var gpio: GPIO
    public var power: Power
    public var configuration: Configuration
    public var current: Current
    /// RTK corrections: whether the receiver takes RTCM 3, and when a demand needs it.
    public var corrections: Corrections
    /// For simulator boards: how the simulated receiver behaves.
    public var simulation: Simulation?
    /// Facts and their sources, and what is unverified.
    public var notes: [String]
    /// Where the facts come from (datasheets, schematics, example code).
    public var sources: [String]

    public init(
        name: String, title: String, chip: Chip, link: Link, gpio: GPIO = GPIO(), power: Power,
        configuration: Configuration = Configuration(), current: Current = Current(),
        corrections: Corrections = Corrections(), simulation: Simulation? = nil, notes: [String] = [],
        sources: [String] = []
    ) {
        self.corrections = corrections
        self.name = name
        self.title = title
        self.chip = chip
        self.link = link
        self.gpio = gpio
        self.power = power
        self.configuration = configuration
        self.current = current
        self.simulation = simulation
        self.notes = notes
        self.sources = sources
    }

    /// Whether the receiver's supply can be cut completely (a GPIO enable line).
    public var hasHardPowerControl: Bool { power.strategies.contains(.gpioEnable) }
}
