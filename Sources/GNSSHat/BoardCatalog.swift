// Finding a board by name or path. The board files are compiled into the library too
// (BuiltInBoards.swift, generated from boards/*.json), so a static binary copied onto a Pi
// knows every supported hat without any file next to it.
import LinuxSystem

/// The known boards: files in the search directories, then the built-in copies.
///
/// A name is looked up as `NAME.json` in each of ``searchDirectories()`` in order, then among
/// the built-in boards; a file therefore overrides the built-in board of the same name. An
/// argument that contains `/` or ends in `.json` is read as a file path.
public enum BoardCatalog {
    /// The board used when none is named: the built-in simulated receiver.
    public static let defaultBoardName = "simulator"

    /// The environment variable with extra board directories (separated by `:`), searched first.
    public static let environmentVariable = "GNSSHAT_BOARDS"

    /// The directory for boards installed on the system.
    public static let systemDirectory = "/etc/gnss-hat/boards"

    /// The names of the built-in boards, sorted.
    public static var builtInNames: [String] { BuiltInBoards.files.map(\.name).sorted() }

    /// The directories searched for `NAME.json`, in order: those in `$GNSSHAT_BOARDS`,
    /// `/etc/gnss-hat/boards`, and `boards/` next to the running executable.
    public static func searchDirectories() -> [String] {
        var directories: [String] = []
        if let extra = FileSystem.environment(environmentVariable) {
            directories += extra.split(separator: ":").map(String.init).filter { !$0.isEmpty }
        }
        directories.append(systemDirectory)
        if let executable = FileSystem.linkDestination("/proc/self/exe"),
            let slash = executable.lastIndex(of: "/")
        {
            directories.append(String(executable[..<slash]) + "/boards")
        }
        return directories
    }

    /// Loads a board by name (`uputronics-gps-rtc`) or by path (`./my-hat.json`).
    public static func load(_ nameOrPath: String, searchDirectories: [String]? = nil) throws(BoardError) -> Board {
        if nameOrPath.contains("/") || nameOrPath.hasSuffix(".json") {
            return try loadFile(nameOrPath)
        }
        for directory in searchDirectories ?? Self.searchDirectories() {
            let path = directory + "/" + nameOrPath + ".json"
            if FileSystem.exists(path) {
                return try loadFile(path, expectedName: nameOrPath)
            }
        }
        if let board = try builtIn(nameOrPath) { return board }
        throw BoardError(file: nameOrPath, problem: "no such board (built in: \(builtInNames.joined(separator: ", ")); "
            + "or give the path of a board file)")
    }

    /// Reads and checks a board file.
    public static func loadFile(_ path: String, expectedName: String? = nil) throws(BoardError) -> Board {
        guard let data = try? FileSystem.contents(of: path) else {
            throw BoardError(file: path, problem: "cannot be read (missing, or no permission)")
        }
        let board = try Board(json: String(decoding: data, as: UTF8.self), file: path)
        if let expectedName, board.name != expectedName {
            throw BoardError(file: path, field: "name",
                             problem: "\"\(board.name)\" differs from the file name \"\(expectedName).json\"")
        }
        return board
    }

    /// The built-in board of this name, or nil when there is none.
    public static func builtIn(_ name: String) throws(BoardError) -> Board? {
        guard let file = BuiltInBoards.files.first(where: { $0.name == name }) else { return nil }
        return try Board(json: file.json, file: "built-in board \(name)")
    }

    /// Every built-in board, in name order.
    public static func builtInBoards() throws(BoardError) -> [Board] {
        var boards: [Board] = []
        for name in builtInNames {
            if let board = try builtIn(name) { boards.append(board) }
        }
        return boards
    }
}
