// One output line of a simulated hat: the level the host drives goes to the line and on to the
// simulated receiver's input.
import PiHardware

final class HatOutputLine: OutputLine {
    let inner: any OutputLine
    let input: (@Sendable (Bool) -> Void)?

    init(inner: any OutputLine, input: (@Sendable (Bool) -> Void)?) {
        self.inner = inner
        self.input = input
    }

    var name: String { inner.name }

    func setActive(_ active: Bool) throws {
        try inner.setActive(active)
        input?(active)
    }

    func isActive() throws -> Bool {
        try inner.isActive()
    }
}
