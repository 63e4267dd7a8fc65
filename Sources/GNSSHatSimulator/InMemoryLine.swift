// One output line kept in memory.
import LinuxSystem
import PiHardware

final class InMemoryLine: OutputLine {
    let name: String
    private let level: Lock<Bool>

    init(name: String, level: Bool) {
        self.name = name
        self.level = Lock(level)
    }

    func setActive(_ active: Bool) throws {
        level.withLock { $0 = active }
    }

    func isActive() throws -> Bool {
        level.withLock { $0 }
    }
}
