// The GPIO lines a board drives, requested at the first power-on and then held: a released line
// falls back to whatever its pull resistor says (a Pi's pin controller turns a freed pin back
// into an input), which could switch a load switch on, so the lines stay requested and driven
// until the Receiver shuts down.
import LinuxSystem
import PiHardware
import Signals

/// What a board's output line does.
enum LineRole: String, Sendable, CaseIterable, CustomStringConvertible {
    case enable, standby, forceOn = "force-on", reset, extint = "EXTINT"

    var description: String { rawValue }
}

/// The board's output lines and PPS input, requested once and held.
final class PowerLines: Sendable {
    let board: Board
    let gpio: any GPIOLines
    private let outputs = Lock<[LineRole: any OutputLine]>([:])
    private let ppsSource = Lock<(any EdgeEventSource)?>(nil)

    init(board: Board, gpio: any GPIOLines) {
        self.board = board
        self.gpio = gpio
    }

    func line(for role: LineRole) -> Board.Line? {
        switch role {
        case .enable: board.gpio.enable
        case .standby: board.gpio.standby
        case .forceOn: board.gpio.forceOn
        case .reset: board.gpio.reset
        case .extint: board.gpio.extint
        }
    }

    /// Requests every output line the board has and does not hold yet, each driven inactive
    /// (off, running, not in reset) from the start. Throws the first failure, typed.
    func acquire() throws(ReceiverError) {
        for role in LineRole.allCases {
            guard let line = line(for: role), outputs.withLock({ $0[role] == nil }) else { continue }
            do {
                let output = try gpio.output(
                    board.gpio.address(line), initiallyActive: false, activeLow: line.activeLow)
                outputs.withLock { $0[role] = output }
            } catch let error as GPIOError {
                throw .gpio(role: role.description, error)
            } catch {
                throw .gpio(role: role.description, .unsupported("\(error)", device: "\(line.line)"))
            }
        }
    }

    /// Drives a line (asserted: its function on). A line that has gone away is dropped, so the
    /// next power-on requests it again.
    func set(_ role: LineRole, asserted: Bool) throws(ReceiverError) {
        guard let output = outputs.withLock({ $0[role] }) else { return }
        do {
            try output.setActive(asserted)
        } catch {
            let gpioError = (error as? GPIOError) ?? .unsupported("\(error)", device: output.name)
            if gpioError.deviceIsGone { outputs.withLock { $0[role] = nil } }
            throw .gpio(role: role.description, gpioError)
        }
    }

    /// Whether the board has, and this object holds, the line.
    func holds(_ role: LineRole) -> Bool {
        outputs.withLock { $0[role] != nil }
    }

    /// Each held output line's role and its logical value read back from the line (nil when
    /// the read fails), in role order.
    func levels() -> [(role: LineRole, asserted: Bool?)] {
        let held = outputs.withLock { $0 }
        return LineRole.allCases.compactMap { role in
            guard let line = held[role] else { return nil }
            return (role, try? line.isActive())
        }
    }

    /// The PPS edge source, requested on first use; nil when the board has no PPS line.
    func pps() throws(ReceiverError) -> (any EdgeEventSource)? {
        guard let line = board.gpio.pps else { return nil }
        if let source = ppsSource.withLock({ $0 }) { return source }
        do {
            let source = try gpio.edges(board.gpio.address(line), .rising, activeLow: line.activeLow, bias: .asIs)
            ppsSource.withLock { $0 = source }
            return source
        } catch let error as GPIOError {
            throw .gpio(role: "PPS", error)
        } catch {
            throw .gpio(role: "PPS", .unsupported("\(error)", device: "\(line.line)"))
        }
    }

    /// Forgets a PPS source that failed, so the next session requests it again.
    func dropPPS() {
        ppsSource.withLock { $0 = nil }
    }

    /// Releases everything (the Receiver is shutting down).
    func releaseAll() {
        let released = outputs.withLock { outputs -> [any OutputLine] in
            defer { outputs.removeAll() }
            return Array(outputs.values)
        }
        for line in released {
            (line as? GPIOOutputLine)?.release()
        }
        let pps = ppsSource.withLock { source -> (any EdgeEventSource)? in
            defer { source = nil }
            return source
        }
        (pps as? GPIOInputLine)?.release()
    }
}
