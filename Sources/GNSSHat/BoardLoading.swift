// Reading a board file: JSON text in, a checked `Board` out, or one line naming the file and the
// field that is wrong.
import PiHardware

/// Why a board could not be loaded: one line naming the file, the field and the problem, e.g.
/// `boards/my-hat.json: link.baud: expected a whole number, found the text "fast"`.
public struct BoardError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file (or `built-in NAME`), or the name that was looked up.
    public var file: String
    /// The field's path (`gpio.enable.line`, `power.strategies[1]`), when one field is wrong.
    public var field: String?
    /// What is wrong.
    public var problem: String

    public init(file: String, field: String? = nil, problem: String) {
        self.file = file
        self.field = field
        self.problem = problem
    }

    public var description: String {
        "\(file): " + (field.map { "\($0): " } ?? "") + problem
    }
}

extension Board {
    /// Parses and checks a board file's text. `file` names it in errors.
    public init(json text: String, file: String) throws(BoardError) {
        let root: JSONValue
        do throws(JSONSyntaxError) {
            root = try JSONParser.parse(text)
        } catch {
            throw BoardError(file: file, problem: "line \(error.line), column \(error.column): \(error.problem)")
        }
        var reader = try FieldReader(root, path: "", file: file)
        self = try BoardSchema.board(&reader)
    }
}

/// Reads the fields of one JSON object, remembering which were asked for so that any other
/// field (a typo) is reported.
struct FieldReader {
    let file: String
    let path: String
    private let members: [(key: String, value: JSONValue)]
    private var asked: [String] = []

    init(_ value: JSONValue, path: String, file: String) throws(BoardError) {
        self.file = file
        self.path = path
        guard case .object(let members) = value.kind else {
            throw BoardError(file: file, field: path.isEmpty ? nil : path,
                             problem: "expected an object { ... }, found \(value.typeName)")
        }
        self.members = members
    }

    func fieldPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func error(_ key: String?, _ problem: String) -> BoardError {
        BoardError(file: file, field: key.map(fieldPath) ?? (path.isEmpty ? nil : path), problem: problem)
    }

    /// The raw value of `key`, or nil when absent or `null`.
    mutating func value(_ key: String) -> JSONValue? {
        asked.append(key)
        guard let value = members.first(where: { $0.key == key })?.value else { return nil }
        if case .null = value.kind { return nil }
        return value
    }

    mutating func required(_ key: String) throws(BoardError) -> JSONValue {
        guard let value = value(key) else { throw error(key, "missing (required)") }
        return value
    }

    mutating func string(_ key: String) throws(BoardError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value.kind else {
            throw error(key, "expected text in double quotes, found \(value.typeName)")
        }
        return text
    }

    mutating func requiredString(_ key: String) throws(BoardError) -> String {
        guard let text = try string(key) else { throw error(key, "missing (required)") }
        guard !text.isEmpty else { throw error(key, "must not be empty") }
        return text
    }

    mutating func number(_ key: String) throws(BoardError) -> Double? {
        guard let value = value(key) else { return nil }
        guard case .number(let number, _) = value.kind else {
            throw error(key, "expected a number, found \(value.typeName)")
        }
        return number
    }

    mutating func nonNegative(_ key: String) throws(BoardError) -> Double? {
        guard let number = try number(key) else { return nil }
        guard number >= 0, number.isFinite else { throw error(key, "must not be negative") }
        return number
    }

    mutating func integer(_ key: String) throws(BoardError) -> Int? {
        guard let value = value(key) else { return nil }
        guard case .number(let number, let text) = value.kind else {
            throw error(key, "expected a whole number, found \(value.typeName)")
        }
        guard number.rounded() == number, abs(number) < 1e15 else {
            throw error(key, "expected a whole number, found \(text)")
        }
        return Int(number)
    }

    mutating func bool(_ key: String) throws(BoardError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value.kind else {
            throw error(key, "expected true or false, found \(value.typeName)")
        }
        return flag
    }

    /// A duration given in seconds.
    mutating func seconds(_ key: String) throws(BoardError) -> Duration? {
        guard let number = try nonNegative(key) else { return nil }
        guard number <= 86_400 else { throw error(key, "more than a day (the unit is seconds)") }
        return .nanoseconds(Int64((number * 1e9).rounded()))
    }

    mutating func object(_ key: String) throws(BoardError) -> FieldReader? {
        guard let value = value(key) else { return nil }
        return try FieldReader(value, path: fieldPath(key), file: file)
    }

    /// Reads the object at `key` with `read`, or returns nil when it is absent.
    mutating func section<T>(
        _ key: String, _ read: (inout FieldReader) throws(BoardError) -> T
    ) throws(BoardError) -> T? {
        guard var reader = try object(key) else { return nil }
        return try read(&reader)
    }

    mutating func strings(_ key: String) throws(BoardError) -> [String]? {
        guard let value = value(key) else { return nil }
        guard case .array(let elements) = value.kind else {
            throw error(key, "expected a list [ ... ] of texts, found \(value.typeName)")
        }
        var texts: [String] = []
        for (index, element) in elements.enumerated() {
            guard case .string(let text) = element.kind else {
                throw BoardError(file: file, field: "\(fieldPath(key))[\(index)]",
                                 problem: "expected text in double quotes, found \(element.typeName)")
            }
            texts.append(text)
        }
        return texts
    }

    /// Reports the first field that was never asked for (a typo, or a field of another kind).
    func finish() throws(BoardError) {
        for member in members where !asked.contains(member.key) {
            // A key "" would name no field at the top level: it is named as written.
            throw error(member.key.isEmpty ? "\"\"" : member.key,
                        "unknown field (known here: \(asked.joined(separator: ", ")))")
        }
    }
}

/// The board file format: field names, defaults and the checks across fields.
enum BoardSchema {
    static func board(_ reader: inout FieldReader) throws(BoardError) -> Board {
        let name = try reader.requiredString("name")
        guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw reader.error("name", "use letters, digits, '-' and '_' only (it is given on the command line)")
        }
        let title = try reader.requiredString("title")
        guard let chip = try reader.section("chip", Self.chip) else { throw reader.error("chip", "missing (required)") }
        guard let link = try reader.section("link", Self.link) else { throw reader.error("link", "missing (required)") }
        let gpio = try reader.section("gpio", Self.gpio) ?? Board.GPIO()
        guard let power = try reader.section("power", Self.power) else {
            throw reader.error("power", "missing (required)")
        }
        let configuration = try reader.section("configuration", Self.configuration) ?? Board.Configuration()
        let current = try reader.section("currentMilliamps", Self.current) ?? Board.Current()
        let corrections = try reader.section("corrections", Self.corrections) ?? Board.Corrections()
        var simulation = try reader.section("simulation", Self.simulation)
        let notes = try reader.strings("notes") ?? []
        let sources = try reader.strings("sources") ?? []
        try reader.finish()

        if case .simulator = link {
            simulation = simulation ?? Board.Simulation()
        } else if simulation != nil {
            throw reader.error("simulation", "only a board with link type \"simulator\" has a simulation")
        }
        let board = Board(name: name, title: title, chip: chip, link: link, gpio: gpio, power: power,
                          configuration: configuration, current: current, corrections: corrections,
                          simulation: simulation, notes: notes, sources: sources)
        try check(board, reader)
        return board
    }

    static func chip(_ reader: inout FieldReader) throws(BoardError) -> Board.Chip {
        let familyText = try reader.requiredString("family")
        guard let family = Board.ChipFamily(rawValue: familyText) else {
            throw reader.error("family", "unknown chip family \"\(familyText)\" (known: "
                + Board.ChipFamily.allCases.map(\.rawValue).joined(separator: ", ") + ")")
        }
        let model = try reader.string("model")
        try reader.finish()
        return Board.Chip(family: family, model: model)
    }

    static func link(_ reader: inout FieldReader) throws(BoardError) -> Board.Link {
        let type = try reader.requiredString("type")
        let link: Board.Link
        switch type {
        case "uart":
            let path = try reader.requiredString("path")
            guard let baud = try reader.integer("baud") else { throw reader.error("baud", "missing (required)") }
            guard SerialPort.standardSpeeds.contains(baud) else {
                throw reader.error("baud", "\(baud) is not a standard speed ("
                    + SerialPort.standardSpeeds.map(String.init).joined(separator: ", ") + ")")
            }
            let rtsCts = try reader.bool("rtsCts") ?? false
            let detect = try reader.bool("detectSpeed") ?? true
            link = .uart(Board.UART(path: path, baud: baud, rtsCts: rtsCts, detectSpeed: detect))
        case "i2c":
            guard let bus = try reader.integer("bus") else { throw reader.error("bus", "missing (required)") }
            guard (0...255).contains(bus) else { throw reader.error("bus", "must be between 0 and 255") }
            let address = try Self.address(&reader) ?? 0x42
            link = .i2c(Board.I2C(bus: bus, address: address))
        case "simulator":
            let baud = try reader.integer("baud") ?? 9600
            guard SerialPort.standardSpeeds.contains(baud) else {
                throw reader.error("baud", "\(baud) is not a standard speed")
            }
            link = .simulator(baud: baud)
        default:
            throw reader.error("type", "unknown link type \"\(type)\" (known: uart, i2c, simulator)")
        }
        try reader.finish()
        return link
    }

    /// An I2C address as a number (66) or a hex text ("0x42").
    static func address(_ reader: inout FieldReader) throws(BoardError) -> UInt16? {
        guard let value = reader.value("address") else { return nil }
        let number: Int?
        switch value.kind {
        case .string(let text) where text.lowercased().hasPrefix("0x"): number = Int(text.dropFirst(2), radix: 16)
        case .number(let value, _) where value.rounded() == value && abs(value) < 1024: number = Int(value)
        default: number = nil
        }
        guard let number, (0x08...0x77).contains(number) else {
            throw reader.error(
                "address", "expected a 7-bit address like \"0x42\" (0x08 to 0x77), found \(value.typeName)")
        }
        return UInt16(number)
    }

    static func gpio(_ reader: inout FieldReader) throws(BoardError) -> Board.GPIO {
        var gpio = Board.GPIO(chip: GPIOChipSelector(try reader.string("chip") ?? "auto"))
        gpio.enable = try line(&reader, "enable")
        gpio.standby = try line(&reader, "standby")
        (gpio.forceOn, gpio.forceOnPulse) = try pulsedLine(&reader, "forceOn", defaultPulse: .seconds(1))
        gpio.reset = try line(&reader, "reset")
        gpio.pps = try line(&reader, "pps")
        (gpio.extint, gpio.extintPulse) = try pulsedLine(&reader, "extint", defaultPulse: .milliseconds(100))
        try reader.finish()
        let named: [(String, Board.Line?)] = [
            ("enable", gpio.enable), ("standby", gpio.standby), ("forceOn", gpio.forceOn), ("reset", gpio.reset),
            ("pps", gpio.pps), ("extint", gpio.extint),
        ]
        for (index, (name, line)) in named.enumerated() {
            guard let line else { continue }
            if let other = named[..<index].first(where: { $0.1?.line == line.line }) {
                throw reader.error(name, "uses \(line.line), as \(other.0) does")
            }
        }
        return gpio
    }

    private static func line(_ reader: inout FieldReader, _ key: String) throws(BoardError) -> Board.Line? {
        guard var lineReader = try reader.object(key) else { return nil }
        let line = try parseLine(&lineReader)
        try lineReader.finish()
        return line
    }

    private static func pulsedLine(
        _ reader: inout FieldReader, _ key: String, defaultPulse: Duration
    ) throws(BoardError) -> (Board.Line?, Duration) {
        guard var lineReader = try reader.object(key) else { return (nil, defaultPulse) }
        let line = try parseLine(&lineReader)
        let pulse = try lineReader.seconds("pulseSeconds") ?? defaultPulse
        try lineReader.finish()
        return (line, pulse)
    }

    private static func parseLine(_ reader: inout FieldReader) throws(BoardError) -> Board.Line {
        let value = try reader.required("line")
        let selector: GPIOLineSelector
        switch value.kind {
        case .number(let number, _) where number.rounded() == number && number >= 0 && number < 10_000:
            selector = .offset(Int(number))
        case .string(let text) where !text.isEmpty:
            selector = GPIOLineSelector(text)
        default:
            throw reader.error("line", "expected a line number (BCM) or a line name, found \(value.typeName)")
        }
        let active = try reader.string("active") ?? "high"
        guard active == "high" || active == "low" else {
            throw reader.error("active", "expected \"high\" or \"low\", found the text \"\(active)\"")
        }
        return Board.Line(selector, activeLow: active == "low")
    }

    static func power(_ reader: inout FieldReader) throws(BoardError) -> Board.Power {
        guard let names = try reader.strings("strategies") else {
            throw reader.error("strategies", "missing (required)")
        }
        var strategies: [Board.PowerStrategy] = []
        for (index, name) in names.enumerated() {
            let field = "strategies[\(index)]"
            guard let strategy = Board.PowerStrategy(rawValue: name) else {
                throw reader.error(field, "unknown power strategy \"\(name)\" (known: "
                    + Board.PowerStrategy.allCases.map(\.rawValue).joined(separator: ", ") + ")")
            }
            guard !strategies.contains(strategy) else { throw reader.error(field, "\"\(name)\" is listed twice") }
            strategies.append(strategy)
        }
        var power = Board.Power(strategies: strategies)
        power.onWait = try reader.seconds("onWaitSeconds") ?? power.onWait
        power.upTimeout = try reader.seconds("upTimeoutSeconds") ?? power.upTimeout
        guard power.upTimeout > .zero else { throw reader.error("upTimeoutSeconds", "must be more than 0") }
        power.linger = try reader.seconds("lingerSeconds") ?? power.linger
        power.minimumOffTime = try reader.seconds("minimumOffSeconds") ?? power.minimumOffTime
        power.offKeepsBackup = try reader.bool("offKeepsBackup") ?? power.offKeepsBackup
        try reader.finish()
        return power
    }

    static func configuration(_ reader: inout FieldReader) throws(BoardError) -> Board.Configuration {
        var configuration = Board.Configuration()
        configuration.enabled = try reader.bool("enabled") ?? configuration.enabled
        configuration.period = try reader.seconds("periodSeconds") ?? configuration.period
        guard configuration.period >= .milliseconds(25), configuration.period <= .milliseconds(65_535) else {
            throw reader.error("periodSeconds", "must be between 0.025 and 65.535 seconds")
        }
        configuration.ackTimeout = try reader.seconds("ackTimeoutSeconds") ?? configuration.ackTimeout
        guard configuration.ackTimeout > .zero else { throw reader.error("ackTimeoutSeconds", "must be more than 0") }
        configuration.attempts = try reader.integer("attempts") ?? configuration.attempts
        guard (1...10).contains(configuration.attempts) else { throw reader.error("attempts", "must be 1 to 10") }
        try reader.finish()
        return configuration
    }

    static func current(_ reader: inout FieldReader) throws(BoardError) -> Board.Current {
        var current = Board.Current()
        current.volts = try reader.nonNegative("volts") ?? current.volts
        current.acquisition = try reader.nonNegative("acquisition")
        current.tracking = try reader.nonNegative("tracking")
        current.powerSave = try reader.nonNegative("powerSave")
        current.standby = try reader.nonNegative("standby")
        current.backup = try reader.nonNegative("backup")
        try reader.finish()
        return current
    }

    static func corrections(_ reader: inout FieldReader) throws(BoardError) -> Board.Corrections {
        var corrections = Board.Corrections()
        corrections.rtcm3 = try reader.bool("rtcm3") ?? corrections.rtcm3
        corrections.rtkAccuracy = try reader.nonNegative("rtkAccuracyMetres") ?? corrections.rtkAccuracy
        guard corrections.rtkAccuracy > 0, corrections.rtkAccuracy <= 10 else {
            throw reader.error("rtkAccuracyMetres", "must be more than 0 and at most 10 metres")
        }
        corrections.typicalTimeToFixed = try reader.seconds("typicalTimeToFixedSeconds")
        try reader.finish()
        return corrections
    }

    static func simulation(_ reader: inout FieldReader) throws(BoardError) -> Board.Simulation {
        var simulation = Board.Simulation()
        simulation.coldStart = try reader.seconds("coldStartSeconds") ?? simulation.coldStart
        simulation.hotStart = try reader.seconds("hotStartSeconds") ?? simulation.hotStart
        simulation.boot = try reader.seconds("bootSeconds") ?? simulation.boot
        simulation.backupSupply = try reader.bool("backupSupply") ?? simulation.backupSupply
        simulation.latitude = try reader.number("latitude") ?? simulation.latitude
        guard abs(simulation.latitude) <= 90 else { throw reader.error("latitude", "must be between -90 and 90") }
        simulation.longitude = try reader.number("longitude") ?? simulation.longitude
        guard abs(simulation.longitude) <= 180 else { throw reader.error("longitude", "must be between -180 and 180") }
        simulation.altitude = try reader.number("altitude") ?? simulation.altitude
        simulation.speed = try reader.nonNegative("speed") ?? simulation.speed
        simulation.course = try reader.nonNegative("course") ?? simulation.course
        guard simulation.course < 360 else { throw reader.error("course", "must be below 360 degrees") }
        simulation.rtkFloat = try reader.seconds("rtkFloatSeconds") ?? simulation.rtkFloat
        simulation.rtkFixed = try reader.seconds("rtkFixedSeconds") ?? simulation.rtkFixed
        guard simulation.rtkFixed >= simulation.rtkFloat else {
            throw reader.error("rtkFixedSeconds", "must not be less than rtkFloatSeconds (fixed follows float)")
        }
        try reader.finish()
        return simulation
    }

    /// Checks across fields: every strategy has the lines and the chip it needs.
    static func check(_ board: Board, _ reader: FieldReader) throws(BoardError) {
        for (index, strategy) in board.power.strategies.enumerated() {
            let field = "power.strategies[\(index)]"
            func fail(_ problem: String) -> BoardError {
                BoardError(file: reader.file, field: field, problem: "\"\(strategy)\" \(problem)")
            }
            switch strategy {
            case .gpioEnable:
                if board.gpio.enable == nil { throw fail("needs gpio.enable") }
            case .standbyLine:
                if board.gpio.standby == nil { throw fail("needs gpio.standby") }
            case .forceOnPulse:
                if board.gpio.forceOn == nil { throw fail("needs gpio.forceOn") }
            case .ubloxBackup:
                if !board.chip.family.isUBlox { throw fail("needs a u-blox chip (chip.family: \(board.chip.family))") }
                if case .i2c = board.link, board.gpio.extint == nil {
                    throw fail(
                        "needs a wake-up source: a UART link or gpio.extint (I2C traffic does not wake a u-blox)")
                }
            case .ubloxGNSSStop:
                if !board.chip.family.isUBlox { throw fail("needs a u-blox chip (chip.family: \(board.chip.family))") }
            case .mtkStandby:
                if board.chip.family != .mtk { throw fail("needs an MTK chip (chip.family: \(board.chip.family))") }
                if case .i2c = board.link { throw fail("needs a UART link (any UART byte wakes an MTK)") }
            }
        }
        if board.corrections.rtcm3, case .i2c = board.link, !board.chip.family.isUBlox {
            throw BoardError(file: reader.file, field: "corrections.rtcm3",
                             problem: "RTCM 3 over I2C is written to a u-blox DDC port; this chip is "
                                + "\(board.chip.family)")
        }
        if board.corrections.rtcm3, board.simulation != nil, board.chip.family != .ubloxGen9 {
            throw BoardError(file: reader.file, field: "corrections.rtcm3",
                             problem: "the simulated receiver does RTK as a u-blox F9 only (chip.family ublox-gen9)")
        }
        if case .i2c = board.link, board.chip.family == .mtk {
            throw BoardError(file: reader.file, field: "link.type", problem: "an MTK chip is read over UART, not I2C")
        }
        // One truth for the simulated hat: its backup supply is what the board says power-off keeps.
        if let simulation = board.simulation, simulation.backupSupply != board.power.offKeepsBackup {
            throw BoardError(
                file: reader.file, field: "simulation.backupSupply",
                problem: "\(simulation.backupSupply) contradicts power.offKeepsBackup (\(board.power.offKeepsBackup))")
        }
    }
}
