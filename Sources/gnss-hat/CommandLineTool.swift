// Subcommand dispatch, exit statuses and error classification.
import GNSSHat
import LinuxSystem

/// The exit statuses of every subcommand (documented in `gnss-hat --help` and the README).
enum ExitStatus: Int32, CaseIterable {
    /// Done.
    case ok = 0
    /// A run-time failure: unreadable input, the receiver refused its configuration, no fix in budget.
    case failure = 1
    /// Bad usage: an unknown command or option, a missing or malformed argument.
    case usage = 2
    /// A board or configuration error: no such board, a board file that does not load, a board
    /// of the wrong kind for the command.
    case configuration = 3
    /// Hardware unavailable: a GPIO line, serial port or I2C bus missing, busy or not permitted,
    /// or a receiver that does not answer.
    case hardwareUnavailable = 4

    var meaning: String {
        switch self {
        case .ok: "success"
        case .failure: "run-time failure (unreadable input, receiver refused a command, no fix within the budget)"
        case .usage: "bad usage (unknown command or option, missing or malformed argument)"
        case .configuration: "board or configuration error (no such board, invalid board file, wrong kind of board)"
        case .hardwareUnavailable: "hardware unavailable (GPIO line, serial port or I2C bus missing, busy or "
            + "not permitted; receiver not answering)"
        }
    }
}

/// A failure a subcommand reports: its exit status and the one line it prints.
struct CommandFailure: Error, CustomStringConvertible {
    var status: ExitStatus
    var description: String

    init(_ status: ExitStatus, _ description: String) {
        self.status = status
        self.description = description
    }

    /// The status an error from the libraries stands for.
    static func status(of error: any Error) -> ExitStatus {
        switch error {
        case let failure as CommandFailure: return failure.status
        case is UsageError: return .usage
        case is BoardError, is NoHardwareProvider: return .configuration
        case let receiver as ReceiverError:
            switch receiver {
            case .gpio, .link, .deviceGone, .noResponse: return .hardwareUnavailable
            case .configurationRejected, .configurationTimedOut, .notRunning, .noFix: return .failure
            }
        case is FileError: return .failure
        case is any HardwareFault: return .hardwareUnavailable
        default: return .failure
        }
    }
}

/// A subcommand: its grammar and what it does.
protocol Subcommand: Sendable {
    /// The grammar, without the common options (`CommandLineTool` adds them).
    static var spec: CommandSpec { get }
    /// Runs with parsed arguments; throws `CommandFailure`, `UsageError` or a library error.
    static func run(_ arguments: ParsedArguments) async throws
}

enum CommandLineTool {
    static let commands: [any Subcommand.Type] = [
        WatchCommand.self, DecodeCommand.self, ServeCommand.self, SimulateCommand.self, PowerCommand.self,
        BoardsCommand.self, InfoCommand.self, TTFFCommand.self, MQTTCheckCommand.self, NTRIPCommand.self,
    ]

    static func spec(_ command: any Subcommand.Type) -> CommandSpec { command.spec.withCommonOptions() }

    static var help: String {
        var lines = [
            "usage: gnss-hat COMMAND [OPTIONS] [ARGUMENTS]",
            "  A Raspberry Pi GNSS hat, powered only while somebody listens.",
            "commands:",
        ]
        let width = commands.map { $0.spec.name.count }.max() ?? 0
        for command in commands {
            let name = command.spec.name
            lines.append("  \(name)\(String(repeating: " ", count: width - name.count))  \(command.spec.summary)")
        }
        lines.append("common options (every command):")
        for option in CommandSpec.commonOptions {
            lines.append("  \(option.synopsis)  \(option.help)")
        }
        lines.append("exit status:")
        for status in ExitStatus.allCases { lines.append("  \(status.rawValue)  \(status.meaning)") }
        lines.append("'gnss-hat COMMAND --help' describes one command; 'gnss-hat --version' prints the version.")
        return lines.joined(separator: "\n")
    }

    static func run(_ arguments: [String]) async -> ExitStatus {
        guard let name = arguments.first else {
            StandardStream.error.write(help + "\n")
            return .usage
        }
        if ["-h", "--help", "help"].contains(name) {
            StandardStream.output.write(help + "\n")
            return .ok
        }
        if ["-V", "--version"].contains(name) {
            StandardStream.output.write("gnss-hat \(GNSSHatVersion.current)\n")
            return .ok
        }
        guard let command = commands.first(where: { $0.spec.name == name }) else {
            StandardStream.error.write("gnss-hat: unknown command '\(name)'\n"
                + "usage: gnss-hat COMMAND [OPTIONS] (gnss-hat --help lists the commands)\n")
            return .usage
        }
        let spec = spec(command)
        let parsed: ParsedArguments
        do {
            parsed = try ArgumentParser.parse(Array(arguments.dropFirst()), for: spec)
        } catch {
            StandardStream.error.write("gnss-hat \(name): \(error)\n"
                + "usage: gnss-hat \(name) [OPTIONS]\(spec.arguments.isEmpty ? "" : " " + spec.arguments)"
                + " (gnss-hat \(name) --help for more)\n")
            return .usage
        }
        if parsed.wantsHelp {
            StandardStream.output.write(spec.help + "\n")
            return .ok
        }
        do {
            try await command.run(parsed)
            return .ok
        } catch {
            let status = CommandFailure.status(of: error)
            // One line: a library error's description may span lines only by accident.
            let text = "\(error)".split(separator: "\n").joined(separator: "; ")
            StandardStream.error.write("gnss-hat \(name): \(text)\n")
            // A mistake in an option's value (a bad broker URL) is its one line; a grammar mistake
            // is followed by the usage line.
            if status == .usage && !(error is CommandFailure) {
                StandardStream.error.write("usage: gnss-hat \(name) [OPTIONS]"
                    + (spec.arguments.isEmpty ? "" : " " + spec.arguments) + " (gnss-hat \(name) --help for more)\n")
            }
            return status
        }
    }
}

/// Loading the board every command names, from the search directories and `./boards`.
enum BoardChoice {
    /// `$GNSSHAT_BOARDS`, `/etc/gnss-hat/boards`, `boards/` next to the executable, then `./boards`.
    static var searchDirectories: [String] {
        var directories = BoardCatalog.searchDirectories()
        if !directories.contains("boards") { directories.append("boards") }
        return directories
    }

    static func load(_ arguments: ParsedArguments) throws(BoardError) -> Board {
        try BoardCatalog.load(arguments.board, searchDirectories: searchDirectories)
    }
}

/// Waits for SIGINT or SIGTERM (the self-pipe watcher), checking every tenth of a second.
struct Interruption {
    let watcher: SignalWatcher

    init() throws {
        watcher = try SignalWatcher()
    }

    /// Whether a signal has come since the last call.
    func arrived() -> Bool { !watcher.drain().isEmpty }

    /// Suspends until a signal comes, or `limit` passes (nil: no limit). Returns true for a signal.
    @discardableResult
    func wait(limit: Duration? = nil) async -> Bool {
        let start = ContinuousClock.now
        while true {
            if arrived() { return true }
            if let limit, ContinuousClock.now - start >= limit { return false }
            try? await TimerThreadClock().sleep(for: .milliseconds(100))
        }
    }
}
