// Every board a user can name: the files in the search directories and the built-in copies,
// with where each comes from and whether it loads.
import LinuxSystem

extension BoardCatalog {
    /// One board found while listing.
    public struct Entry: Sendable {
        /// The name to give `--board`.
        public var name: String
        /// Where it comes from: a file path, or `built-in`.
        public var source: String
        /// The board, or why its file does not load.
        public var board: Result<Board, BoardError>
        /// Whether a file earlier in the search order (or a file, over a built-in copy) hides it.
        public var isShadowed: Bool
    }

    /// Every board in `directories` (each `*.json`, in name order) and then the built-in boards.
    /// A name that appears twice is marked shadowed after its first appearance, the way
    /// ``load(_:searchDirectories:)`` would pick the first.
    public static func list(searchDirectories directories: [String]? = nil) -> [Entry] {
        var entries: [Entry] = []
        var seen: Set<String> = []
        for directory in directories ?? searchDirectories() {
            guard let names = try? FileSystem.entries(of: directory) else { continue }
            for file in names.sorted() where file.hasSuffix(".json") {
                let name = String(file.dropLast(5))
                // The template is a starting point for a new board, not a board.
                if name == "custom-template" { continue }
                let path = directory + "/" + file
                let board = Result { () throws(BoardError) -> Board in try loadFile(path, expectedName: name) }
                entries.append(Entry(name: name, source: path, board: board, isShadowed: seen.contains(name)))
                seen.insert(name)
            }
        }
        for name in builtInNames where name != "custom-template" {
            let board = Result { () throws(BoardError) -> Board in
                guard let board = try builtIn(name) else {
                    throw BoardError(file: name, problem: "no such built-in board")
                }
                return board
            }
            entries.append(Entry(name: name, source: "built-in", board: board, isShadowed: seen.contains(name)))
            seen.insert(name)
        }
        return entries
    }
}
