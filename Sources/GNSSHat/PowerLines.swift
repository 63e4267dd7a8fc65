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

    /// A line that went away with its chip while held: the error, and the level it was last driven to,
    /// where it stays until the chip comes back (a pin keeps its level when its controller goes).
    struct LostLine: Sendable {
        let error: GPIOError
        let wasAsserted: Bool
    }

    private struct Held {
        var outputs: [LineRole: any OutputLine] = [:]
        /// The level each held output was last driven to (asserted or not).
        var driven: [LineRole: Bool] = [:]
        /// Lines lost with their chip, until they are requested again.
        var lost: [LineRole: LostLine] = [:]
    }

    private let held = Lock(Held())
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
            guard let line = line(for: role), held.withLock({ $0.outputs[role] == nil }) else { continue }
            do {
                let output = try gpio.output(
                    board.gpio.address(line), initiallyActive: false, activeLow: line.activeLow)
                held.withLock { held in
                    held.outputs[role] = output
                    held.driven[role] = false
                    held.lost[role] = nil
                }
            } catch let error as GPIOError {
                throw .gpio(role: role.description, error)
            } catch {
                throw .gpio(role: role.description, .unsupported("\(error)", device: "\(line.line)"))
            }
        }
    }

    /// Drives a line (asserted: its function on). A line whose chip has gone away takes every line
    /// with it (see ``dropAll(_:)``); until they are requested again, driving one away from the level
    /// it was left at throws the error it went away with: a power-off cannot switch off a supply it
    /// lost hold of, and must say so every time.
    func set(_ role: LineRole, asserted: Bool) throws(ReceiverError) {
        let (output, lost) = held.withLock { ($0.outputs[role], $0.lost[role]) }
        guard let output else {
            if let lost, lost.wasAsserted != asserted { throw .gpio(role: role.description, lost.error) }
            return
        }
        do {
            try output.setActive(asserted)
            held.withLock { $0.driven[role] = asserted }
        } catch {
            let gpioError = (error as? GPIOError) ?? .unsupported("\(error)", device: output.name)
            if gpioError.deviceIsGone { dropAll(gpioError) }
            throw .gpio(role: role.description, gpioError)
        }
    }

    /// A line is gone: the board's lines are all on one chip, and a handle of a removed chip stays
    /// dead even once the chip is back. All are dropped and closed (each remembered as lost at the
    /// level it was last driven to), so that the next power-on requests them again from the chip
    /// that comes back; the PPS source too, which its loop, if one runs, lets go of when it ends.
    private func dropAll(_ error: GPIOError) {
        let dropped = held.withLock { held -> [any OutputLine] in
            for role in held.outputs.keys {
                held.lost[role] = LostLine(error: error, wasAsserted: held.driven[role] ?? false)
            }
            defer {
                held.outputs.removeAll()
                held.driven.removeAll()
            }
            return Array(held.outputs.values)
        }
        for line in dropped {
            (line as? GPIOOutputLine)?.release()
        }
        dropPPS()
    }

    /// Whether the board has, and this object holds, the line.
    func holds(_ role: LineRole) -> Bool {
        held.withLock { $0.outputs[role] != nil }
    }

    /// Each held output line's role and its logical value read back from the line (nil when
    /// the read fails), in role order.
    func levels() -> [(role: LineRole, asserted: Bool?)] {
        let outputs = held.withLock { $0.outputs }
        return LineRole.allCases.compactMap { role in
            guard let line = outputs[role] else { return nil }
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
        let released = held.withLock { held -> [any OutputLine] in
            defer { held = Held() }
            return Array(held.outputs.values)
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
