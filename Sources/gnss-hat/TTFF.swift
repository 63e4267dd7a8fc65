// `gnss-hat ttff`: time to first fix after a cold start and after a hot start (a power cycle), and
// whether the enable line is inactive once the last subscriber has gone. The measuring half of
// scripts/hil-pi.sh, in Swift so the script parses one JSON line rather than a live view.
import GNSSHat
import GNSSHatSimulator
import GNSSProtocol
import LinuxSystem
import Signals

enum TTFFCommand: Subcommand {
    static let spec = CommandSpec(
        name: "ttff",
        summary: "measure time to first fix, cold then hot, and the enable line after the last client",
        options: [
            .value("budget", "SECONDS", "the longest wait for each fix (default 180)"),
            .value("off", "SECONDS", "how long the receiver stays off before the hot start (default 10)"),
            .value("speed", "N", "run a simulator board's clock N times faster (1 to 1000)"),
            .flag("json", "one JSON object instead of text"),
        ],
        details: """
            1. powers on (one subscriber) and sends a cold start (u-blox UBX-CFG-RST navBbrMask 0xFFFF, GNSS only;
               MTK PMTK103), then times the first fix with a position (fixes within 2 s of the reset are ignored);
            2. the subscriber leaves: after --linger (default 0 here) the power-off runs; the enable line, where
               the board has one, is read back and must be inactive;
            3. after --off seconds, powers on again and times the first fix from the power-on (a hot start when
               backup power kept the ephemeris); the enable line is checked again after it leaves.
            Exit status 0 when both fixes came within the budget and the line checks passed, else 1.
            """
    )

    struct Outcome {
        var cold: Duration?
        var hot: Duration?
        var lineChecks: [String] = []
        var lineFailures = 0
    }

    static func run(_ arguments: ParsedArguments) async throws {
        let budget = try arguments.seconds("budget") ?? .seconds(180)
        let off = try arguments.seconds("off") ?? .seconds(10)
        let speed = try arguments.number("speed", in: 1...1000)
        let linger = try arguments.seconds("linger") ?? .zero
        let board = try BoardChoice.load(arguments)
        let options = ReceiverOptions(linger: linger)
        let hardware = CommandHardware.providers()
        let clock = try CommandHardware.clock(speed: speed, board: board, providers: hardware)
        let receiver = try Receiver(
            board: CommandHardware.board(board, at: clock.rate), options: options, hardware: hardware, clock: clock)
        let log: @Sendable (String) -> Void = { line in
            if arguments.verbose { StandardStream.error.write("gnss-hat ttff [\(seconds(clock.now.offset))]: \(line)\n") }
        }
        let outcome: Outcome
        do {
            outcome = try await measure(receiver, clock: clock, budget: budget, off: off, log: log)
        } catch {
            await receiver.shutdown()
            throw error
        }
        await receiver.shutdown()
        let passed = outcome.cold != nil && outcome.hot != nil && outcome.lineFailures == 0
        if arguments.flag("json") {
            func value(_ duration: Duration?) -> String { duration.map { seconds($0) } ?? "null" }
            let checks = outcome.lineChecks.map { "\"" + WatchSession.escape($0) + "\"" }.joined(separator: ",")
            StandardStream.output.write("{\"class\":\"TTFF\",\"board\":\"\(WatchSession.escape(board.name))\","
                + "\"cold\":\(value(outcome.cold)),\"hot\":\(value(outcome.hot)),\"budget\":\(seconds(budget)),"
                + "\"lineChecks\":[\(checks)],\"passed\":\(passed)}\n")
        } else {
            var lines = ["board: \(board.name)"]
            lines.append("cold start TTFF: " + (outcome.cold.map { "\(seconds($0)) s" } ?? "no fix within \(seconds(budget)) s"))
            lines.append("hot start TTFF: " + (outcome.hot.map { "\(seconds($0)) s" } ?? "no fix within \(seconds(budget)) s"))
            lines += outcome.lineChecks
            lines.append(passed ? "PASS" : "FAIL")
            StandardStream.output.write(lines.joined(separator: "\n") + "\n")
        }
        if !passed { throw CommandFailure(.failure, "the measurement did not pass (see above)") }
    }

    /// The cold and hot measurements, on the receiver's clock.
    static func measure(
        _ receiver: Receiver, clock: AcceleratedClock, budget: Duration, off: Duration,
        log: @escaping @Sendable (String) -> Void
    ) async throws -> Outcome {
        var outcome = Outcome()
        let measurement = TTFFMeasurement(receiver: receiver, clock: clock, budget: budget, log: log)
        try await measurement.coldStart(into: &outcome)
        try await measurement.hotStart(after: off, into: &outcome)
        return outcome
    }

    static func seconds(_ duration: Duration) -> String {
        SimulatedSeconds.format(SimulatedSeconds.value(duration))
    }
}

/// What the cold and the hot measurement share: the receiver, its clock, the first fix with a position
/// after a moment, and the failure that ended the receiver's signal.
final class TTFFMeasurement: Sendable {
    let receiver: Receiver
    let clock: AcceleratedClock
    let budget: Duration
    let log: @Sendable (String) -> Void
    let ignoreUntil = Lock<Duration>(.zero)
    let firstFix = Lock<Duration?>(nil)
    let failure = Lock<ReceiverError?>(nil)

    init(receiver: Receiver, clock: AcceleratedClock, budget: Duration, log: @escaping @Sendable (String) -> Void) {
        self.receiver = receiver
        self.clock = clock
        self.budget = budget
        self.log = log
    }

    func subscribe() -> SignalToken {
        receiver.fixes.subscribe(onValue: { fix in
            let now = self.clock.now.offset
            guard fix.hasPosition, now >= self.ignoreUntil.withLock({ $0 }) else { return }
            self.firstFix.withLock { if $0 == nil { $0 = now } }
        }, onCompletion: { completion in
            if case .failure(let error) = completion { self.failure.withLock { $0 = error as? ReceiverError } }
        })
    }

    func waitUntil(_ limit: Duration, _ condition: () -> Bool) async -> Bool {
        let deadline = clock.now.offset + limit
        while clock.now.offset < deadline {
            if condition() { return true }
            try? await TimerThreadClock().sleep(for: .milliseconds(20))
        }
        return condition()
    }

    func checkFailure() throws {
        if let error = failure.withLock({ $0 }) { throw error }
    }

    func offAndCheck(_ phase: String, into outcome: inout TTFFCommand.Outcome) async {
        _ = await waitUntil(budget) { receiver.powerState == .off }
        let lines = receiver.outputLines()
        guard let enable = lines.first(where: { $0.name == "enable" }) else {
            outcome.lineChecks.append("\(phase): no enable line on this board (nothing to check)")
            return
        }
        if enable.asserted == false {
            outcome.lineChecks.append("\(phase): enable line inactive after the last subscriber (read back)")
        } else {
            outcome.lineChecks.append("\(phase): enable line NOT inactive after the last subscriber "
                + "(read back: \(enable.asserted.map { $0 ? "asserted" : "?" } ?? "unreadable"))")
            outcome.lineFailures += 1
        }
    }

    /// Powers on, sends the chip's cold start, and times the first fix after it.
    func coldStart(into outcome: inout TTFFCommand.Outcome) async throws {
        let token = subscribe()
        log("powering on")
        _ = await waitUntil(budget) { receiver.powerState == .on || failure.withLock { $0 != nil } }
        try checkFailure()
        let family = receiver.board.chip.family
        let reset = family.isUBlox ? UBXCfgRst(navBbrMask: 0xFFFF, resetMode: 0x02).frame : PMTK.command(103)
        try await receiver.send(reset)
        let resetAt = clock.now.offset
        ignoreUntil.withLock { $0 = resetAt + .seconds(2) }
        firstFix.withLock { $0 = nil }
        log("cold start sent")
        if await waitUntil(budget + .seconds(2), { firstFix.withLock { $0 != nil } || failure.withLock { $0 != nil } }) {
            try checkFailure()
            outcome.cold = firstFix.withLock { $0 }.map { $0 - resetAt }
        }
        log("cold: \(outcome.cold.map { TTFFCommand.seconds($0) } ?? "no fix")")
        token.cancel()
        await offAndCheck("after the cold start", into: &outcome)
    }

    /// Leaves the receiver off for `off`, powers it on again, and takes its own time to first fix.
    func hotStart(after off: Duration, into outcome: inout TTFFCommand.Outcome) async throws {
        log("off for \(TTFFCommand.seconds(off)) s")
        _ = await waitUntil(off) { false }
        ignoreUntil.withLock { $0 = .zero }
        firstFix.withLock { $0 = nil }
        let before = receiver.statistics.powerOns
        let token = subscribe()
        log("powering on again")
        // The receiver's own count from this power-on to its first fix: a fix replayed to the new
        // subscriber from the last session does not count.
        func hotFix() -> Duration? {
            let statistics = receiver.statistics
            guard statistics.powerOns > before, let last = statistics.timesToFirstFix.last else { return nil }
            return last
        }
        if await waitUntil(budget, { hotFix() != nil || failure.withLock { $0 != nil } }) {
            try checkFailure()
            outcome.hot = hotFix()
        }
        log("hot: \(outcome.hot.map { TTFFCommand.seconds($0) } ?? "no fix")")
        token.cancel()
        await offAndCheck("after the hot start", into: &outcome)
    }
}
