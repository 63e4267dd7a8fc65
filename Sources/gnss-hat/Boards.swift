// `gnss-hat boards`: every board a user can name, with its chip, link and power strategies.
import GNSSHat
import LinuxSystem

enum BoardsCommand: Subcommand {
    static let spec = CommandSpec(
        name: "boards",
        summary: "list the boards: built in, in /etc/gnss-hat/boards and ./boards (chip, link, power)",
        details: """
            Search order for --board NAME: $GNSSHAT_BOARDS, /etc/gnss-hat/boards, boards/ next to the executable,
            ./boards, then the built-in copies; a file shadows a later board of the same name. --verbose adds
            each board's notes. A board file that does not load is listed with its error (exit status 3).
            """
    )

    static func run(_ arguments: ParsedArguments) async throws {
        let entries = BoardCatalog.list(searchDirectories: BoardChoice.searchDirectories)
        var broken = 0
        var lines: [String] = []
        for entry in entries {
            switch entry.board {
            case .success(let board):
                let model = board.chip.model.map { " \($0)" } ?? ""
                var line = "\(entry.name)\(entry.isShadowed ? " (shadowed)" : "")  [\(entry.source)]\n"
                line += "    \(board.title)\n"
                line += "    chip \(board.chip.family)\(model); \(board.link)\n"
                line += "    power " + board.power.strategies.map(\.description).joined(separator: ", ")
                    + (board.hasHardPowerControl ? " (hard power)" : "")
                if let pps = board.gpio.pps { line += "; PPS \(pps.line)" }
                if arguments.verbose {
                    for note in board.notes { line += "\n    note: \(note)" }
                }
                lines.append(line)
            case .failure(let error):
                broken += 1
                lines.append("\(entry.name)  [\(entry.source)]\n    does not load: \(error)")
            }
        }
        StandardStream.output.write(lines.joined(separator: "\n") + "\n")
        if broken > 0 {
            throw CommandFailure(.configuration, "\(broken) board file\(broken == 1 ? "" : "s") did not load (listed above)")
        }
    }
}
