// The command line's grammar: each subcommand declares its options and positional arguments,
// one parser reads them, and the help text is generated from the same declaration, so the two
// cannot drift apart. Written here because the package depends on nothing outside the toolchain.

/// One option of a subcommand: `--name`, `--name VALUE` or `--name=VALUE`.
struct OptionSpec: Sendable, Hashable {
    /// The long name without dashes (`board`).
    var name: String
    /// A one-letter alias (`-v`), if any.
    var short: Character?
    /// The placeholder of the value (`SECONDS`), or nil for a flag.
    var value: String?
    /// One line of help.
    var help: String
    /// Whether the option may be given more than once (values accumulate).
    var repeatable = false

    static func flag(_ name: String, short: Character? = nil, _ help: String) -> OptionSpec {
        OptionSpec(name: name, short: short, value: nil, help: help)
    }

    static func value(_ name: String, _ placeholder: String, _ help: String, repeatable: Bool = false) -> OptionSpec {
        OptionSpec(name: name, short: nil, value: placeholder, help: help, repeatable: repeatable)
    }

    /// `--board NAME|PATH` or `-v, --verbose`.
    var synopsis: String {
        (short.map { "-\($0), " } ?? "") + "--\(name)" + (value.map { " \($0)" } ?? "")
    }
}

/// A subcommand's grammar and help.
struct CommandSpec: Sendable {
    /// The subcommand (`decode`).
    var name: String
    /// One line for `gnss-hat --help`.
    var summary: String
    /// The positional arguments as the usage line shows them (`FILE|-`, `on|off|status`).
    var arguments: String = ""
    /// How many positional arguments are accepted.
    var argumentCount: ClosedRange<Int> = 0...0
    /// The options (the common ones are added by `withCommonOptions`).
    var options: [OptionSpec] = []
    /// Paragraphs after the options: what the command does, exit status, examples.
    var details: String = ""

    /// `--board`, `--linger`, `--verbose` and `--help`, which every subcommand takes.
    static let commonOptions: [OptionSpec] = [
        .value("board", "NAME|PATH", "a board name (gnss-hat boards) or a board file; default: simulator"),
        .value("linger", "SECONDS", "how long the receiver stays on after the last client leaves (default: the board's)"),
        .flag("verbose", short: "v", "say more on standard error"),
        .flag("help", short: "h", "show this help"),
    ]

    /// This spec with the common options after its own.
    func withCommonOptions() -> CommandSpec {
        var spec = self
        spec.options += Self.commonOptions.filter { common in !options.contains { $0.name == common.name } }
        return spec
    }

    /// The usage line and the option list.
    var help: String {
        var lines = ["usage: gnss-hat \(name) [OPTIONS]" + (arguments.isEmpty ? "" : " \(arguments)"), "  \(summary)"]
        if !options.isEmpty {
            lines.append("options:")
            let width = min(options.map(\.synopsis.count).max() ?? 0, 28)
            for option in options {
                let synopsis = option.synopsis
                let padding = String(repeating: " ", count: max(width - synopsis.count, 0))
                lines.append("  \(synopsis)\(padding)  \(option.help)")
            }
        }
        if !details.isEmpty { lines.append(details) }
        return lines.joined(separator: "\n")
    }
}

/// A mistake on the command line: the message says which argument and why.
struct UsageError: Error, Equatable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// What the parser found, with typed accessors that throw `UsageError`.
struct ParsedArguments: Sendable, Equatable {
    /// Values of value options by name, in the order given.
    var values: [String: [String]] = [:]
    /// Flags given, by name.
    var flags: Set<String> = []
    /// Positional arguments, in order.
    var arguments: [String] = []

    /// Whether `--help` (or `-h`) was given.
    var wantsHelp: Bool { flags.contains("help") }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The value of a (non-repeatable) option, or nil.
    func value(_ name: String) -> String? { values[name]?.last }

    /// The board option, with the default board.
    var board: String { value("board") ?? "simulator" }

    var verbose: Bool { flag("verbose") }

    /// A number of seconds, 0 to 10^9 (fractions allowed), or nil when absent.
    func seconds(_ name: String) throws(UsageError) -> Duration? {
        guard let text = value(name) else { return nil }
        guard let number = Double(text), number.isFinite, number >= 0, number < 1e9 else {
            throw UsageError("--\(name) needs a number of seconds, not '\(text)'")
        }
        return .milliseconds(Int64((number * 1000).rounded()))
    }

    /// A number within `range`, or nil when absent.
    func number(_ name: String, in range: ClosedRange<Double>) throws(UsageError) -> Double? {
        guard let text = value(name) else { return nil }
        guard let number = Double(text), number.isFinite, range.contains(number) else {
            throw UsageError("--\(name) needs a number from \(Self.format(range.lowerBound)) to "
                + "\(Self.format(range.upperBound)), not '\(text)'")
        }
        return number
    }

    static func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }
}

/// Reads arguments against a `CommandSpec`.
///
/// Accepted: `--name`, `--name VALUE`, `--name=VALUE`, a short alias (`-v`), `--` (everything
/// after it is positional), and `-` as a positional argument (standard input). Refused, with
/// a `UsageError` naming the argument: an unknown option, a value option without its value, a
/// flag given a value, a non-repeatable option given twice, too few or too many positional
/// arguments. `--help` wins over every other mistake, so `gnss-hat decode --help` always helps.
enum ArgumentParser {
    static func parse(_ arguments: [String], for spec: CommandSpec) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var firstError: UsageError?
        func record(_ error: UsageError) {
            if firstError == nil { firstError = error }
        }
        var rest = arguments[...]
        var onlyPositional = false
        while let argument = rest.popFirst() {
            if onlyPositional || argument == "-" || !argument.hasPrefix("-") {
                parsed.arguments.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositional = true
                continue
            }
            var name: String
            var inlineValue: String?
            if argument.hasPrefix("--") {
                name = String(argument.dropFirst(2))
                if let equals = name.firstIndex(of: "=") {
                    inlineValue = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
            } else {
                guard argument.count == 2, let letter = argument.last,
                    let option = spec.options.first(where: { $0.short == letter })
                else {
                    record(UsageError("unknown option '\(argument)'"))
                    continue
                }
                name = option.name
            }
            guard let option = spec.options.first(where: { $0.name == name }) else {
                record(UsageError("unknown option '--\(name)'"))
                continue
            }
            if option.value == nil {
                if inlineValue != nil { record(UsageError("--\(name) takes no value")) }
                parsed.flags.insert(name)
                continue
            }
            guard let value = inlineValue ?? rest.popFirst() else {
                record(UsageError("--\(name) needs a value (\(option.value ?? "VALUE"))"))
                continue
            }
            if !option.repeatable && parsed.values[name] != nil {
                record(UsageError("--\(name) is given more than once"))
            }
            parsed.values[name, default: []].append(value)
        }
        if parsed.wantsHelp { return parsed }
        if let firstError { throw firstError }
        let count = parsed.arguments.count
        if !spec.argumentCount.contains(count) {
            if count < spec.argumentCount.lowerBound {
                throw UsageError("missing \(spec.arguments.isEmpty ? "argument" : spec.arguments)")
            }
            let extra = parsed.arguments[spec.argumentCount.upperBound]
            throw UsageError(spec.argumentCount.upperBound == 0
                ? "unexpected argument '\(extra)'" : "too many arguments ('\(extra)')")
        }
        return parsed
    }
}
