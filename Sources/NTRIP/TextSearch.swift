// A substring test of our own: the standard library's `StringProtocol.contains(_:)` for a string
// lives in _StringProcessing, which brings the regex engine (about 2 MB) into the static binary.

extension StringProtocol {
    /// Whether `needle`'s UTF-8 bytes occur in this text's, as they are (no case folding).
    func containsBytes(of needle: String) -> Bool {
        let text = Array(utf8)
        let wanted = Array(needle.utf8)
        guard !wanted.isEmpty else { return true }
        guard wanted.count <= text.count else { return false }
        for start in 0...(text.count - wanted.count) where text[start] == wanted[0] {
            if text[start..<(start + wanted.count)].elementsEqual(wanted) { return true }
        }
        return false
    }
}
