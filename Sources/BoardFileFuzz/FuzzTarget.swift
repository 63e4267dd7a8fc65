// libFuzzer entry point over board files: GNSSHat's JSON reader and board loader (Board(json:file:)),
// and the board writer (Board.json). Built only by scripts/fuzz.sh (GNSSHAT_FUZZ=1).
//
// Properties checked, beyond "no crash, no sanitizer report":
// - any text gives a Board or a BoardError naming the file, and either a field (its path) or, for bad
//   syntax, the line and column, or (the document is not an object) what it is;
// - a Board, written back as JSON and loaded again, equals itself, and its JSON is a fixed point.

import GNSSHat

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let board: Board
    do throws(BoardError) {
        board = try Board(json: text, file: "fuzz.json")
    } catch {
        checkNamesWhere(error)
        return 0
    }
    let written = board.json
    let again: Board
    do throws(BoardError) {
        again = try Board(json: written, file: "written.json")
    } catch {
        fatalError("a loaded board, written back, does not load: \(error)\n\(written)")
    }
    guard again == board else { fatalError("a loaded board, written back and loaded again, differs:\n\(written)") }
    guard again.json == written else { fatalError("a board's JSON is not a fixed point") }
    return 0
}

private func checkNamesWhere(_ error: BoardError) {
    guard error.file == "fuzz.json" else { fatalError("a board error does not name its file") }
    if let field = error.field {
        guard !field.isEmpty else { fatalError("a board error names an empty field") }
        return
    }
    let syntax = error.problem.hasPrefix("line ") && error.problem.contains(", column ")
    let notAnObject = error.problem.hasPrefix("expected an object")
    guard syntax || notAnObject else { fatalError("a board error names no field: \(error)") }
}
