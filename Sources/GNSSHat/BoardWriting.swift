// Writing a board back as a board file: every field spelt out (defaults included), so that the
// text loads again into the same `Board` (`Board(json:file:)`), whatever file it came from.
import PiHardware

extension Board {
    /// The board as board-file JSON, one field per line, which ``init(json:file:)`` reads back into
    /// an equal board. Durations are written as exact decimal seconds, numbers as the shortest text
    /// that reads back to the same `Double`.
    public var json: String {
        var w = BoardJSONWriter()
        w.open()
        w.string("name", name)
        w.string("title", title)
        w.object("chip") { w in
            w.string("family", chip.family.rawValue)
            if let model = chip.model { w.string("model", model) }
        }
        w.object("link") { w in Self.write(link, &w) }
        w.object("gpio") { w in Self.write(gpio, &w) }
        w.object("power") { w in
            w.strings("strategies", power.strategies.map(\.rawValue))
            w.seconds("onWaitSeconds", power.onWait)
            w.seconds("upTimeoutSeconds", power.upTimeout)
            w.seconds("lingerSeconds", power.linger)
            w.seconds("minimumOffSeconds", power.minimumOffTime)
            w.bool("offKeepsBackup", power.offKeepsBackup)
        }
        w.object("configuration") { w in
            w.bool("enabled", configuration.enabled)
            w.seconds("periodSeconds", configuration.period)
            w.seconds("ackTimeoutSeconds", configuration.ackTimeout)
            w.int("attempts", configuration.attempts)
        }
        w.object("corrections") { w in
            w.bool("rtcm3", corrections.rtcm3)
            w.number("rtkAccuracyMetres", corrections.rtkAccuracy)
            if let typical = corrections.typicalTimeToFixed { w.seconds("typicalTimeToFixedSeconds", typical) }
        }
        w.object("currentMilliamps") { w in
            w.number("volts", current.volts)
            w.optionalNumber("acquisition", current.acquisition)
            w.optionalNumber("tracking", current.tracking)
            w.optionalNumber("powerSave", current.powerSave)
            w.optionalNumber("standby", current.standby)
            w.optionalNumber("backup", current.backup)
        }
        if let simulation { w.object("simulation") { w in Self.write(simulation, &w) } }
        w.strings("notes", notes)
        w.strings("sources", sources)
        w.close()
        return w.text + "\n"
    }

    private static func write(_ link: Link, _ w: inout BoardJSONWriter) {
        switch link {
        case .uart(let uart):
            w.string("type", "uart")
            w.string("path", uart.path)
            w.int("baud", uart.baud)
            w.bool("rtsCts", uart.rtsCts)
            w.bool("detectSpeed", uart.detectSpeed)
        case .i2c(let i2c):
            w.string("type", "i2c")
            w.int("bus", i2c.bus)
            w.int("address", Int(i2c.address))
        case .simulator(let baud):
            w.string("type", "simulator")
            w.int("baud", baud)
        }
    }

    private static func write(_ gpio: GPIO, _ w: inout BoardJSONWriter) {
        let chip = switch gpio.chip {
        case .automatic: "auto"
        case .path(let text), .name(let text), .label(let text): text
        }
        w.string("chip", chip)
        let lines: [(String, Line?, Duration?)] = [
            ("enable", gpio.enable, nil), ("standby", gpio.standby, nil), ("forceOn", gpio.forceOn, gpio.forceOnPulse),
            ("reset", gpio.reset, nil), ("pps", gpio.pps, nil), ("extint", gpio.extint, gpio.extintPulse),
        ]
        for case let (key, line?, pulse) in lines {
            w.object(key) { w in
                switch line.line {
                case .offset(let offset): w.int("line", offset)
                case .name(let name): w.string("line", name)
                }
                w.string("active", line.activeLow ? "low" : "high")
                if let pulse { w.seconds("pulseSeconds", pulse) }
            }
        }
    }

    private static func write(_ simulation: Simulation, _ w: inout BoardJSONWriter) {
        w.seconds("coldStartSeconds", simulation.coldStart)
        w.seconds("hotStartSeconds", simulation.hotStart)
        w.seconds("bootSeconds", simulation.boot)
        w.bool("backupSupply", simulation.backupSupply)
        w.number("latitude", simulation.latitude)
        w.number("longitude", simulation.longitude)
        w.number("altitude", simulation.altitude)
        w.number("speed", simulation.speed)
        w.number("course", simulation.course)
        w.seconds("rtkFloatSeconds", simulation.rtkFloat)
        w.seconds("rtkFixedSeconds", simulation.rtkFixed)
    }
}

/// Appends JSON members to a text, indented by nesting depth.
struct BoardJSONWriter {
    private(set) var text = ""
    private var depth = 0
    private var first = true

    mutating func open() {
        text += "{"
        depth += 1
        first = true
    }

    mutating func close() {
        depth -= 1
        text += "\n" + String(repeating: "    ", count: depth) + "}"
        first = false
    }

    private mutating func key(_ name: String) {
        text += first ? "\n" : ",\n"
        first = false
        text += String(repeating: "    ", count: depth)
        Self.quote(name, into: &text)
        text += ": "
    }

    mutating func string(_ name: String, _ value: String) {
        key(name)
        Self.quote(value, into: &text)
    }

    mutating func int(_ name: String, _ value: Int) {
        key(name)
        text += String(value)
    }

    mutating func bool(_ name: String, _ value: Bool) {
        key(name)
        text += value ? "true" : "false"
    }

    /// Swift's shortest round-tripping form (`3.3`, `1e-05`, `-0.0`), which is JSON for a finite value;
    /// the loader accepts only finite numbers.
    mutating func number(_ name: String, _ value: Double) {
        key(name)
        text += value.description
    }

    mutating func optionalNumber(_ name: String, _ value: Double?) {
        guard let value else {
            key(name)
            text += "null"
            return
        }
        number(name, value)
    }

    /// A duration as decimal seconds with up to nine fraction digits (exact for whole nanoseconds).
    mutating func seconds(_ name: String, _ value: Duration) {
        key(name)
        // Board durations are whole nanoseconds (the loader rounds to them); a negative one, which no
        // board file holds, is written with its sign so that the loader names the field.
        let negative = value < .zero
        let (seconds, attoseconds) = (negative ? .zero - value : value).components
        var fraction = String(attoseconds / 1_000_000_000)
        fraction = String(repeating: "0", count: max(0, 9 - fraction.count)) + fraction
        while fraction.last == "0" { fraction.removeLast() }
        text += (negative ? "-" : "") + String(seconds) + (fraction.isEmpty ? "" : "." + fraction)
    }

    mutating func strings(_ name: String, _ values: [String]) {
        key(name)
        text += "["
        for (index, value) in values.enumerated() {
            text += index == 0 ? "" : ", "
            Self.quote(value, into: &text)
        }
        text += "]"
    }

    mutating func object(_ name: String, _ body: (inout BoardJSONWriter) -> Void) {
        key(name)
        open()
        body(&self)
        close()
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\n`, `\t`... or `\u00XX`.
    static func quote(_ value: String, into text: inout String) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
