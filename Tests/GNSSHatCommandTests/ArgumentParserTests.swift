// The argument parser: what it accepts, what it refuses and with which message.
import Testing
@testable import gnss_hat

@Suite("argument parser")
struct ArgumentParserTests {
    static let spec = CommandSpec(
        name: "test", summary: "a test command", arguments: "FILE|-", argumentCount: 1...1,
        options: [
            .flag("json", "JSON"),
            .value("speed", "N", "speed"),
            .value("listen", "ADDR", "listen", repeatable: true),
        ]
    ).withCommonOptions()

    @Test("flags, values in both spellings, short aliases, repeatable values and the positional")
    func accepts() throws {
        let parsed = try ArgumentParser.parse(
            ["--json", "--speed", "5", "--board=uputronics-gps-rtc", "-v", "--listen", "a", "--listen=b", "x.log"],
            for: Self.spec)
        #expect(parsed.flag("json"))
        #expect(parsed.verbose)
        #expect(parsed.value("speed") == "5")
        #expect(parsed.board == "uputronics-gps-rtc")
        #expect(parsed.values["listen"] == ["a", "b"])
        #expect(parsed.arguments == ["x.log"])
        #expect(!parsed.wantsHelp)
    }

    @Test("'-' is a positional argument, and everything after '--' is too")
    func positionals() throws {
        #expect(try ArgumentParser.parse(["-"], for: Self.spec).arguments == ["-"])
        #expect(try ArgumentParser.parse(["--", "--json"], for: Self.spec).arguments == ["--json"])
        #expect(!(try ArgumentParser.parse(["--", "--json"], for: Self.spec).flag("json")))
    }

    @Test("defaults: the simulator board, no verbose")
    func defaults() throws {
        let parsed = try ArgumentParser.parse(["f"], for: Self.spec)
        #expect(parsed.board == "simulator")
        #expect(!parsed.verbose)
        #expect(parsed.value("speed") == nil)
        #expect(try parsed.seconds("linger") == nil)
    }

    @Test("mistakes are refused with a message that names the argument", arguments: [
        (["--bogus", "f"], "unknown option '--bogus'"),
        (["-x", "f"], "unknown option '-x'"),
        (["f", "--speed"], "--speed needs a value (N)"),
        (["--json=1", "f"], "--json takes no value"),
        (["--speed", "1", "--speed", "2", "f"], "--speed is given more than once"),
        ([], "missing FILE|-"),
        (["a", "b"], "too many arguments ('b')"),
    ])
    func refuses(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { try ArgumentParser.parse(arguments, for: Self.spec) }
    }

    @Test("--help wins over every other mistake")
    func help() throws {
        #expect(try ArgumentParser.parse(["--bogus", "-h"], for: Self.spec).wantsHelp)
        #expect(try ArgumentParser.parse(["--help"], for: Self.spec).wantsHelp)
    }

    @Test("seconds and numbers are checked", arguments: [
        ("1.5", true), ("0", true), ("-1", false), ("abc", false), ("nan", false), ("1e10", false),
    ])
    func seconds(text: String, valid: Bool) throws {
        let parsed = try ArgumentParser.parse(["--linger", text, "f"], for: Self.spec)
        if valid {
            #expect(try parsed.seconds("linger") != nil)
        } else {
            #expect(throws: UsageError.self) { try parsed.seconds("linger") }
        }
    }

    @Test("a number outside its range is refused")
    func range() throws {
        let parsed = try ArgumentParser.parse(["--speed", "2000", "f"], for: Self.spec)
        #expect(throws: UsageError("--speed needs a number from 1 to 1000, not '2000'")) {
            try parsed.number("speed", in: 1...1000)
        }
        #expect(try ArgumentParser.parse(["--speed", "5", "f"], for: Self.spec).number("speed", in: 1...1000) == 5)
    }

    @Test("every subcommand has help that lists each of its options and the common ones")
    func helpTexts() {
        for command in CommandLineTool.commands {
            let spec = CommandLineTool.spec(command)
            #expect(spec.help.hasPrefix("usage: gnss-hat \(spec.name)"))
            for option in spec.options { #expect(spec.help.contains("--\(option.name)"), "\(spec.name) --\(option.name)") }
            for common in ["--board", "--linger", "--verbose", "--help"] { #expect(spec.help.contains(common)) }
        }
        for status in ExitStatus.allCases { #expect(CommandLineTool.help.contains("  \(status.rawValue)  ")) }
    }
}
