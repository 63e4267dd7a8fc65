import Foundation
@testable import GNSSHat
import PiHardware
import Testing
import TestSupport

/// The package's root directory.
let packageRoot: String = TestPaths.packageRoot.path

/// Every `boards/*.json` file: (name, path).
let boardFiles: [String] = {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: packageRoot + "/boards")) ?? []
    return names.filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
}()

@Suite("Board files")
struct BoardFileTests {
    @Test("the board files of the issue are all there")
    func expectedBoards() {
        let expected = [
            "adafruit-ultimate-gps", "custom-template", "simulator", "simulator-cut-supply", "simulator-rtk",
            "sparkfun-gps-rtk2", "sparkfun-zed-f9r-phat",
            "uputronics-gps-rtc", "waveshare-l76x", "waveshare-lc29h", "waveshare-max-m8q",
        ]
        #expect(boardFiles == expected)
    }

    @Test("every board file loads, is named after its file, and matches its built-in copy", arguments: boardFiles)
    func loads(name: String) throws {
        let path = packageRoot + "/boards/\(name).json"
        let board = try BoardCatalog.loadFile(path, expectedName: name)
        #expect(board.name == name)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let builtIn = BuiltInBoards.files.first { $0.name == name }
        #expect(builtIn?.json == text, "boards/\(name).json changed: run scripts/generate-boards.sh")
        #expect(try BoardCatalog.builtIn(name) == board)
    }

    @Test("the built-in boards are exactly the board files")
    func builtInsMatchFiles() {
        #expect(BoardCatalog.builtInNames == boardFiles)
    }

    @Test("a board that leaves a current figure out says it is unverified", arguments: boardFiles)
    func unknownFiguresAreExplained(name: String) throws {
        let board = try #require(try BoardCatalog.builtIn(name))
        let current = board.current
        let missing = [current.acquisition, current.tracking, current.standby, current.backup].contains { $0 == nil }
        if missing && name != "custom-template" {
            #expect(board.notes.contains { $0.contains("unverified") }, "\(name) leaves figures out without saying so")
        }
        #expect(!board.sources.isEmpty)
    }

    @Test("the simulator is the default board and has hard power control")
    func simulatorDefault() throws {
        let board = try BoardCatalog.load(BoardCatalog.defaultBoardName, searchDirectories: [])
        #expect(board.name == "simulator")
        #expect(board.hasHardPowerControl)
        #expect(board.simulation != nil)
        guard case .simulator = board.link else {
            Issue.record("the simulator board's link is \(board.link)")
            return
        }
    }

    @Test("the hats' facts from boards.md")
    func facts() throws {
        let l76x = try #require(try BoardCatalog.builtIn("waveshare-l76x"))
        #expect(l76x.gpio.standby == Board.Line(.offset(4), activeLow: true))
        #expect(l76x.gpio.forceOn == Board.Line(.offset(17)))
        #expect(l76x.gpio.forceOnPulse == .seconds(1))
        #expect(l76x.power.strategies == [.forceOnPulse, .standbyLine])
        let uputronics = try #require(try BoardCatalog.builtIn("uputronics-gps-rtc"))
        #expect(uputronics.link == .uart(Board.UART(path: "/dev/serial0", baud: 115200)))
        #expect(uputronics.gpio.pps == Board.Line(.offset(18)))
        #expect(uputronics.current.acquisition == 25 && uputronics.current.tracking == 21)
        let rtk2 = try #require(try BoardCatalog.builtIn("sparkfun-gps-rtk2"))
        #expect(rtk2.link == .i2c(Board.I2C(bus: 1, address: 0x42)))
        #expect(rtk2.chip.family == .ubloxGen9)
        let adafruit = try #require(try BoardCatalog.builtIn("adafruit-ultimate-gps"))
        #expect(adafruit.chip.family == .mtk && adafruit.gpio.pps == Board.Line(.offset(4)))
    }
}

@Suite("Board loading errors")
struct BoardErrorTests {
    /// A valid board to break in one place at a time.
    static let valid = """
        {
            "name": "test-hat",
            "title": "Test",
            "chip": { "family": "ublox-gen8" },
            "link": { "type": "uart", "path": "/dev/serial0", "baud": 9600 },
            "gpio": { "chip": "auto", "enable": { "line": 17 } },
            "power": { "strategies": ["gpio-enable", "ublox-backup"] }
        }
        """

    @Test("a valid file loads, with defaults")
    func valid() throws {
        let board = try Board(json: Self.valid, file: "test.json")
        #expect(board.power.linger == .seconds(10))
        #expect(board.configuration.enabled)
        #expect(board.gpio.enable == Board.Line(.offset(17), activeLow: false))
        #expect(board.power.offKeepsBackup, "unless a board says its power-off cuts the backup supply")
    }

    @Test(
        "power-off keeps backup RAM on every hat but the cut-supply ones",
        arguments: [
            ("custom-template", false), ("simulator-cut-supply", false), ("simulator", true), ("simulator-rtk", true),
            ("adafruit-ultimate-gps", true), ("uputronics-gps-rtc", true), ("waveshare-l76x", true),
            ("waveshare-lc29h", true), ("waveshare-max-m8q", true), ("sparkfun-gps-rtk2", true),
            ("sparkfun-zed-f9r-phat", true),
        ])
    func offKeepsBackup(name: String, keeps: Bool) throws {
        let board = try #require(try BoardCatalog.builtIn(name))
        #expect(board.power.offKeepsBackup == keeps)
        if let simulation = board.simulation { #expect(simulation.backupSupply == keeps) }
    }

    @Test("simulator-cut-supply is the simulator with its supply cut and no backup")
    func cutSupply() throws {
        let cut = try #require(try BoardCatalog.builtIn("simulator-cut-supply"))
        var simulator = try #require(try BoardCatalog.builtIn("simulator"))
        #expect(cut.hasHardPowerControl && !cut.power.offKeepsBackup && cut.simulation?.backupSupply == false)
        #expect(cut.current.backup == 0)
        simulator.name = cut.name
        simulator.title = cut.title
        simulator.notes = cut.notes
        simulator.power.offKeepsBackup = false
        simulator.simulation?.backupSupply = false
        simulator.current.backup = 0
        #expect(simulator == cut, "nothing else differs")
    }

    static let cases: [(replace: String, with: String, error: String)] = [
        ("\"baud\": 9600", "\"baud\": \"fast\"",
         "bad.json: link.baud: expected a whole number, found the text \"fast\""),
        ("\"baud\": 9600", "\"baud\": 12345", "bad.json: link.baud: 12345 is not a standard speed"),
        ("\"line\": 17", "\"lien\": 17", "bad.json: gpio.enable.line: missing (required)"),
        ("\"line\": 17 }", "\"line\": 17, \"activ\": \"low\" }", "bad.json: gpio.enable.activ: unknown field"),
        ("\"line\": 17 }", "\"line\": 17, \"active\": \"down\" }",
         "bad.json: gpio.enable.active: expected \"high\" or \"low\", found the text \"down\""),
        ("\"ublox-backup\"", "\"ublox-sleep\"",
         "bad.json: power.strategies[1]: unknown power strategy \"ublox-sleep\""),
        ("\"ublox-gen8\"", "\"mtk\"", "bad.json: power.strategies[1]: \"ublox-backup\" needs a u-blox chip"),
        ("\"enable\": { \"line\": 17 }", "\"standby\": { \"line\": 17 }",
         "bad.json: power.strategies[0]: \"gpio-enable\" needs gpio.enable"),
        ("\"title\": \"Test\",", "", "bad.json: title: missing (required)"),
        ("\"type\": \"uart\"", "\"type\": \"spi\"", "bad.json: link.type: unknown link type \"spi\""),
        ("\"chip\": \"auto\",", "\"chip\": \"auto\", \"pps\": { \"line\": 17 },",
         "bad.json: gpio.pps: uses line 17, as enable does"),
        ("\"strategies\"", "\"strategys\"", "bad.json: power.strategies: missing (required)"),
        ("\"power\": {", "\"power\": { \"lingerSeconds\": -1,", "bad.json: power.lingerSeconds: must not be negative"),
        ("\"power\": {", "\"power\": { \"offKeepsBackup\": 0,",
         "bad.json: power.offKeepsBackup: expected true or false"),
        ("\"name\": \"test-hat\"", "\"name\": \"test hat\"", "bad.json: name: use letters, digits"),
        ("{ \"family\": \"ublox-gen8\" }", "\"ublox-gen8\"",
         "bad.json: chip: expected an object { ... }, found the text \"ublox-gen8\""),
        ("\"title\": \"Test\",", "\"title\": \"Test\"", "bad.json: line 4, column 5: expected ',' or '}'"),
        ("\"title\": \"Test\",", "\"title\": \"Test\", \"title\": \"Again\",",
         "bad.json: line 3, column 22: field \"title\" appears twice"),
    ]

    @Test("a bad file is rejected with one line naming the file and the field", arguments: cases)
    func rejected(_ example: (replace: String, with: String, error: String)) {
        let text = Self.valid.replacingOccurrences(of: example.replace, with: example.with)
        #expect(text != Self.valid, "the case does not change the text")
        do {
            let board = try Board(json: text, file: "bad.json")
            Issue.record("accepted: \(board)")
        } catch {
            #expect(error.description.hasPrefix(example.error), "got: \(error.description)")
            #expect(!error.description.contains("\n"))
        }
    }

    @Test("u-blox backup over I2C needs an EXTINT line")
    func backupNeedsWakeSource() {
        let text = Self.valid.replacingOccurrences(
            of: "{ \"type\": \"uart\", \"path\": \"/dev/serial0\", \"baud\": 9600 }",
            with: "{ \"type\": \"i2c\", \"bus\": 1, \"address\": \"0x42\" }")
        #expect(throws: BoardError.self) { try Board(json: text, file: "bad.json") }
        let withExtint = text.replacingOccurrences(of: "\"enable\": { \"line\": 17 }",
                                                   with: "\"enable\": { \"line\": 17 }, \"extint\": { \"line\": 5 }")
        #expect(throws: Never.self) { try Board(json: withExtint, file: "ok.json") }
    }

    @Test("names are found in the search directories before the built-in boards")
    func searchOrder() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("boards-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let custom = Self.valid.replacingOccurrences(of: "\"test-hat\"", with: "\"simulator\"")
        try custom.write(to: directory.appendingPathComponent("simulator.json"), atomically: true, encoding: .utf8)
        let found = try BoardCatalog.load("simulator", searchDirectories: [directory.path])
        #expect(found.title == "Test")
        let builtIn = try BoardCatalog.load("simulator", searchDirectories: [])
        #expect(builtIn.title != "Test")
        let byPath = try BoardCatalog.load(directory.appendingPathComponent("simulator.json").path)
        #expect(byPath.title == "Test")

        try Self.valid.write(to: directory.appendingPathComponent("other.json"), atomically: true, encoding: .utf8)
        #expect {
            try BoardCatalog.load("other", searchDirectories: [directory.path])
        } throws: { error in
            let expected = "name: \"test-hat\" differs from the file name \"other.json\""
            return (error as? BoardError)?.description.hasSuffix(expected) ?? false
        }
        #expect {
            try BoardCatalog.load("no-such-hat", searchDirectories: [directory.path])
        } throws: { error in
            (error as? BoardError)?.description.hasPrefix("no-such-hat: no such board (built in: adafruit") ?? false
        }
    }

    @Test("JSON syntax: strings, escapes, numbers", arguments: [
        (#"{"a": "x\u00e9\n\"y\ud83d\ude00"}"#, "xé\n\"y😀"),
        (#"{"a": "plain"}"#, "plain"),
    ])
    func strings(_ example: (json: String, expected: String)) throws {
        let value = try JSONParser.parse(example.json)
        guard case .object(let members) = value.kind, case .string(let text) = members.first?.value.kind else {
            Issue.record("not an object with a string")
            return
        }
        #expect(text == example.expected)
    }

    @Test("JSON syntax errors", arguments: ["{", "[1,]", "{\"a\" 1}", "01", "\"\\x\"", "{} x", "-", "1e", "tru"])
    func syntaxErrors(_ json: String) {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(json) }
    }
}
