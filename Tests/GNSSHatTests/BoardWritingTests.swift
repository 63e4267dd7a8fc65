@testable import GNSSHat
import PiHardware
import Testing

@Suite("Board files written back")
struct BoardWritingTests {
    @Test("every built-in board, written as JSON, loads back into the same board", arguments: boardFiles)
    func builtInRoundTrip(name: String) throws {
        let board = try #require(try BoardCatalog.builtIn(name))
        let again = try Board(json: board.json, file: "written.json")
        #expect(again == board)
    }

    /// A board that sets every field away from its default, with text that needs escaping.
    static let everything = Board(
        name: "all-fields_1", title: "Quote \" backslash \\ tab \t nul \u{0} é 😀",
        chip: Board.Chip(family: .ubloxGen9, model: "ZED\nF9P"),
        link: .i2c(Board.I2C(bus: 3, address: 0x43)),
        gpio: Board.GPIO(
            chip: .label("pinctrl-rp1"), enable: Board.Line(.offset(17), activeLow: true),
            standby: Board.Line(.name("GPS_STBY"), activeLow: false), forceOn: Board.Line(.offset(5), activeLow: false),
            forceOnPulse: .milliseconds(1500), reset: Board.Line(.name("-5"), activeLow: true),
            pps: Board.Line(.offset(4), activeLow: false), extint: Board.Line(.offset(6), activeLow: false),
            extintPulse: .nanoseconds(123_456_789)),
        power: Board.Power(
            strategies: [.gpioEnable, .standbyLine, .forceOnPulse, .ubloxBackup], onWait: .nanoseconds(1),
            upTimeout: .seconds(86_400), linger: .milliseconds(100), minimumOffTime: .seconds(2),
            offKeepsBackup: false),
        configuration: Board.Configuration(enabled: false, period: .milliseconds(25), ackTimeout: .milliseconds(1_001),
                                           attempts: 10),
        current: Board.Current(volts: 0.1, acquisition: 1e-5, tracking: 25.3, powerSave: nil, standby: 0,
                               backup: 1.0e20),
        notes: ["one", "two \"quoted\""], sources: [])

    @Test("a board with every field set, odd text and small and large numbers round-trips")
    func everyField() throws {
        let text = Self.everything.json
        #expect(try Board(json: text, file: "written.json") == Self.everything)
    }

    @Test("a simulator board keeps its simulation, a UART board its flags")
    func simulationAndUART() throws {
        var simulator = try #require(try BoardCatalog.builtIn("simulator"))
        simulator.simulation?.latitude = -89.999_999_999_9
        simulator.simulation?.altitude = -0.0
        simulator.simulation?.course = 359.5
        #expect(try Board(json: simulator.json, file: "s.json") == simulator)
        var uart = try #require(try BoardCatalog.builtIn("custom-template"))
        uart.link = .uart(Board.UART(path: "/dev/ttyAMA0", baud: 115_200, rtsCts: true, detectSpeed: false))
        uart.gpio.chip = .path("/dev/gpiochip4")
        #expect(try Board(json: uart.json, file: "u.json") == uart)
    }

    @Test("an empty key is an unknown field named as written (found by the board fuzz target)")
    func emptyKey() throws {
        let board = try #require(try BoardCatalog.builtIn("simulator"))
        let text = "{\"\": 1," + board.json.dropFirst()
        do {
            _ = try Board(json: text, file: "e.json")
            Issue.record("a board with an empty key loaded")
        } catch {
            #expect(error.field == "\"\"")
            #expect(error.problem.hasPrefix("unknown field"))
        }
    }

    @Test("durations are written as exact decimal seconds")
    func seconds() {
        var writer = BoardJSONWriter()
        writer.open()
        writer.seconds("a", .nanoseconds(1))
        writer.seconds("b", .seconds(3))
        writer.seconds("c", .milliseconds(1_500))
        writer.seconds("d", .zero)
        writer.close()
        #expect(writer.text == "{\n    \"a\": 0.000000001,\n    \"b\": 3,\n    \"c\": 1.5,\n    \"d\": 0\n}")
    }
}
