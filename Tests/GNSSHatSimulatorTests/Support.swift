import LinuxSystem

/// Bytes a simulated receiver sent, collected for a test to take.
final class SentBytes: Sendable {
    private let bytes = Lock<[UInt8]>([])

    func add(_ more: [UInt8]) { bytes.withLock { $0 += more } }

    /// The bytes so far, forgetting them.
    func take() -> [UInt8] {
        bytes.withLock { bytes in
            defer { bytes.removeAll() }
            return bytes
        }
    }
}
