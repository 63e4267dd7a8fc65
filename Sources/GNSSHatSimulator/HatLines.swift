// A simulated hat's GPIO lines: what the host drives reaches the simulated receiver's inputs, and
// the receiver's time pulse is the PPS line.
import GNSSHat
import PiHardware

/// Lines that also drive the simulated receiver: every level the host drives on the
/// board's enable, reset, standby, FORCE_ON or EXTINT line reaches the receiver's input; the
/// PPS line is the receiver's time pulse.
final class HatLines: GPIOLines {
    let board: Board
    let inner: any GPIOLines
    let receiver: SimulatedReceiver

    init(board: Board, inner: any GPIOLines, receiver: SimulatedReceiver) {
        self.board = board
        self.inner = inner
        self.receiver = receiver
    }

    func output(_ address: GPIOLineAddress, initiallyActive: Bool, activeLow: Bool) throws -> any OutputLine {
        let line = try inner.output(address, initiallyActive: initiallyActive, activeLow: activeLow)
        let input = input(for: address)
        input?(initiallyActive)
        return HatOutputLine(inner: line, input: input)
    }

    func edges(_ address: GPIOLineAddress, _ edges: GPIOEdges, activeLow: Bool, bias: GPIOBias) throws
        -> any EdgeEventSource
    {
        if let pps = board.gpio.pps, board.gpio.address(pps) == address { return receiver.ppsOutput }
        return try inner.edges(address, edges, activeLow: activeLow, bias: bias)
    }

    /// The receiver input a line drives (its logical level: asserted = the function on).
    private func input(for address: GPIOLineAddress) -> (@Sendable (Bool) -> Void)? {
        let gpio = board.gpio
        let receiver = receiver
        if let line = gpio.enable, gpio.address(line) == address { return { receiver.setMainPower($0) } }
        if let line = gpio.reset, gpio.address(line) == address { return { receiver.setReset($0) } }
        if let line = gpio.standby, gpio.address(line) == address { return { receiver.setStandby($0) } }
        if let line = gpio.forceOn, gpio.address(line) == address { return { receiver.setForceOn($0) } }
        if let line = gpio.extint, gpio.address(line) == address { return { receiver.setExtint($0) } }
        return nil
    }
}
