// GPIO lines kept in memory, for a simulated hat given no lines of a test's.
import LinuxSystem
import PiHardware

/// GPIO lines kept in memory: what a simulated hat uses when no test lines are given.
final class InMemoryLines: GPIOLines {
    private let lines = Lock<[GPIOLineAddress: InMemoryLine]>([:])

    func output(_ address: GPIOLineAddress, initiallyActive: Bool, activeLow: Bool) throws -> any OutputLine {
        let line = InMemoryLine(name: address.description, level: initiallyActive)
        lines.withLock { $0[address] = line }
        return line
    }

    func edges(_ address: GPIOLineAddress, _ edges: GPIOEdges, activeLow: Bool, bias: GPIOBias) throws
        -> any EdgeEventSource
    {
        SimulatedEdgeSource(name: address.description)
    }
}
