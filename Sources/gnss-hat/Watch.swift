// gnss-hat watch: follow a receiver. On a terminal a compact view redrawn in place (the hardware's
// power, fix, position, satellites, time since power-on); otherwise JSON lines (POWER, PLAN, CLIENT,
// NOTICE, ERROR objects and gpsd's TPV and SKY; on a simulator board a SIMULATOR object at the end).
// The power shown is the hardware's (off between a duty cycle's fixes, power save, on), not whether
// the watch is subscribed. `--demo` runs a scripted set of clients that come and go, so the power is
// seen switching on and off.
import GNSSHat
import GNSSHatSimulator
import GNSSProtocol
import GPSDProtocol
import LinuxSystem
import Signals

enum WatchCommand: Subcommand {
    static let spec = CommandSpec(
        name: "watch",
        summary: "follow a receiver: a live view on a terminal (power, fix, sky, clients), else JSON lines",
        options: [
            .value("duration", "SECONDS", "stop after this many seconds of receiver time (default: until Ctrl-C)"),
            .flag("demo", "scripted clients come and go: watch the power go on and off (about 105 s)"),
            .value("speed", "N", "run a simulated board's clock N times faster (1 to 1000; default 1, 5 with --demo)"),
            .flag("json", "JSON lines even on a terminal (POWER, CLIENT, NOTICE, ERROR, and gpsd's TPV and SKY)"),
            .flag("no-configure", "leave the receiver's configuration alone (read-only)"),
            .value("every", "SECONDS", "a fix at least this often (1 to 86400), the receiver saving power in between"),
            .value("accuracy", "METRES", "a fix this accurate (gpsd's eph): with --every it ends each power-on; "
                + "at or below the board's RTK threshold it takes --ntrip corrections"),
            .value("state-dir", "DIR", "where the aiding state is kept (default as serve: $STATE_DIRECTORY, "
                + "/var/lib/gnss-hat for root, else $XDG_STATE_HOME/gnss-hat)"),
        ] + CorrectionsLink.specs,
        details: """
            With --every the receiver follows a power plan (shown as "plan"): its own power save, or a
            duty cycle that powers it on in time for each fix and off once a fix is good enough; a board
            whose power-off cuts the supply restarts aided from the state kept in DIR.
            examples:
              gnss-hat watch                                   the simulator, live
              gnss-hat watch --board uputronics-gps-rtc --json --duration 60
              gnss-hat watch --every 600 --accuracy 10 --speed 100
              gnss-hat watch --board sparkfun-gps-rtk2 --accuracy 0.02 --ntrip ntrip://me@rtk2go.com/MOUNT \\
                  --ntrip-password-file ~/.ntrip-password
            """ + "\n" + CorrectionsLink.details
    )

    static func run(_ arguments: ParsedArguments) async throws {
        let linger = try arguments.seconds("linger")
        let duration = try arguments.seconds("duration")
        let speed = try arguments.number("speed", in: 1...1000)
        let demo = arguments.flag("demo")
        let board = try BoardChoice.load(arguments)
        let every = try arguments.seconds("every")
        if let every, every < .seconds(1) || every > .seconds(86_400) {
            let text = arguments.value("every") ?? ""
            throw UsageError("--every needs a number of seconds from 1 to 86400, not '\(text)'")
        }
        let accuracy = try arguments.number("accuracy", in: 0.01...100_000)
        let ntrip = try CorrectionsLink.configuration(arguments)
        let stateDirectory = StateDirectory.resolve(
            arguments.value("state-dir"), environment: FileSystem.environment, isRoot: FileSystem.isSuperuser)
        let receiverOptions = ReceiverOptions(
            linger: linger, configure: arguments.flag("no-configure") ? false : nil, stateDirectory: stateDirectory)
        let hardware = CommandHardware.providers(simulatedDayStartsNow: true)
        let clock = try CommandHardware.clock(speed: speed, fallback: demo ? 5 : 1, board: board, providers: hardware)
        let opened = OpenedHats()
        let receiver = try Receiver(
            board: CommandHardware.board(board, at: clock.rate), options: receiverOptions,
            hardware: HatRecordingProvider(inner: hardware, opened: opened),
            clock: clock)
        let json = arguments.flag("json") || !StandardStream.output.isTerminal
        let demand = every.map { FixDemand.every($0, accuracy: accuracy) }
            ?? accuracy.map { FixDemand(horizontalAccuracy: $0) }
        let corrections = CorrectionsLink.attach(ntrip, to: receiver, clock: clock) { line in
            Terminal.write(2, "gnss-hat watch: \(line)\n")
        }
        let session = WatchSession(
            receiver: receiver, board: board, clock: clock, json: json, demo: demo, demand: demand)
        let failure = await session.run(duration: duration ?? (demo ? .seconds(105) : nil))
        await corrections?.stop(receiver)
        if json { for hat in opened.all { session.emitRecord(of: hat) } }
        await receiver.shutdown()
        if let failure { throw failure }
    }
}

/// Writes to standard output and error (through PiHardware; no C call here).
enum Terminal {
    static func write(_ fd: Int32, _ text: String) {
        (fd == 2 ? StandardStream.error : StandardStream.output).write(text)
    }
}

/// What the watch shows, changed by the receiver's callbacks and read by the renderer.
struct WatchState: Sendable {
    var power = HardwarePowerChange(power: .off, reason: .initial, at: .zero)
    var poweredSince: Duration?
    var fix: Fix?
    var sky: SkyView?
    var skyCount = 0
    var clients: [String] = []
    var notice: String?
    var failure: String?
    var error: ReceiverError?
    var failures = 0
    var plan: PowerPlanStatus?
}

/// One run of the watch: the clients (one, or the demo's script), the power observer, the output.
final class WatchSession: Sendable {
    let receiver: Receiver
    let board: Board
    let clock: AcceleratedClock
    let json: Bool
    let demo: Bool
    /// The watch's own demand (`--every`); nil: every epoch.
    let demand: FixDemand?
    let state = Lock(WatchState())
    let tokens = Lock<[String: [SignalToken]]>([:])

    init(receiver: Receiver, board: Board, clock: AcceleratedClock, json: Bool, demo: Bool, demand: FixDemand?) {
        self.receiver = receiver
        self.board = board
        self.clock = clock
        self.json = json
        self.demo = demo
        self.demand = demand
    }

    var now: Duration { clock.now.offset }

    func seconds(_ duration: Duration) -> String {
        let tenths = SimulatedSeconds.tenths(duration)
        return "\(tenths / 10).\(tenths % 10) s"
    }

    /// Runs until `duration`, SIGINT or SIGTERM, or (outside the demo) a failure, which it returns.
    func run(duration: Duration?) async -> (any Error)? {
        let interruption = try? Interruption()

        let observer = Task { await observePower() }
        let planObserver = Task { await observePlan() }
        defer { planObserver.cancel() }
        if !json { Terminal.write(1, "\u{1B}[?25l") }
        defer { if !json { Terminal.write(1, "\u{1B}[?25h") } }
        let script = demo ? DemoScript.steps : [DemoScript.Step(at: .zero, client: "watch", join: true)]
        var next = 0
        var lines = 0
        while true {
            let elapsed = now
            while next < script.count, script[next].at <= elapsed {
                let step = script[next]
                step.join ? join(step.client) : leave(step.client)
                next += 1
            }
            if let duration, elapsed >= duration { break }
            if interruption?.arrived() == true { break }
            if !demo, state.withLock({ $0.failure != nil }) { break }
            if !json { lines = render(replacing: lines) }
            try? await TimerThreadClock().sleep(for: .milliseconds(json ? 100 : 250))
        }
        for client in tokens.withLock({ Array($0.keys) }) { leave(client) }
        observer.cancel()
        if !json {
            _ = render(replacing: lines)
            Terminal.write(1, "\n")
        }
        if !demo, let failure = state.withLock({ $0.failure }) {
            if let error = state.withLock({ $0.error }) { return error }
            return CommandFailure(.failure, failure)
        }
        return nil
    }

    // MARK: Clients

    func join(_ client: String) {
        if json && demo { emit(["class": .text("CLIENT"), "client": .text(client), "action": .text("join")]) }
        let failed: @Sendable (SignalCompletion) -> Void = { [self] completion in
            guard case .failure(let error) = completion else { return }
            // A duty cycle that found no fix: said, and the next one is waited for.
            if case ReceiverError.noFix = error {
                state.withLock { $0.notice = "\(error)" }
                if json { emit(["class": .text("ERROR"), "client": .text(client), "message": .text("\(error)")]) }
                Task { [self] in
                    leave(client)
                    join(client)
                }
                return
            }
            state.withLock { state in
                state.failure = "\(error)"
                state.error = error as? ReceiverError
                state.failures += 1
                state.clients.removeAll { $0 == client }
            }
            if json { emit(["class": .text("ERROR"), "client": .text(client), "message": .text("\(error)")]) }
        }
        let fixes = receiver.fixes(for: demand ?? .continuous).subscribe(onValue: { [self] fix in
            state.withLock { $0.fix = fix }
            if json { Terminal.write(1, jsonLine(GPSDReport.tpv(fix, device: board.name))) }
        }, onCompletion: failed)
        // The sky view is every epoch's: only a continuous watch asks for it (an observer does not count).
        let skyView: @Sendable (@escaping @Sendable (SkyView) -> Void) -> SignalToken = { [receiver, demand] body in
            demand == nil
                ? receiver.sky.subscribe(onValue: body, onCompletion: failed) : receiver.sky.observe(onValue: body)
        }
        let sky = skyView { [self] sky in
            // SKY lines are long: one when the counts change, else every tenth epoch.
            let report = state.withLock { state -> Bool in
                let changed = state.sky.map {
                    $0.satellitesVisible != sky.satellitesVisible || $0.satellitesUsed != sky.satellitesUsed
                } ?? true
                state.sky = sky
                state.skyCount += 1
                return changed || state.skyCount % 10 == 0
            }
            if json && report { Terminal.write(1, jsonLine(GPSDReport.sky(sky, device: board.name))) }
        }
        // Notices by observation: they must not keep the receiver on.
        let notices = receiver.events.observe(onValue: { [self] event in
            guard case .notice(let text) = event else { return }
            state.withLock { $0.notice = text }
            if json { emit(["class": .text("NOTICE"), "message": .text(text)]) }
        }, onCompletion: failed)
        tokens.withLock { $0[client] = [fixes, sky, notices] }
        state.withLock { state in
            if !state.clients.contains(client) { state.clients.append(client) }
        }
    }

    func leave(_ client: String) {
        let removed = tokens.withLock { $0.removeValue(forKey: client) }
        for token in removed ?? [] { token.cancel() }
        state.withLock { $0.clients.removeAll { $0 == client } }
        if json && demo && removed != nil {
            emit(["class": .text("CLIENT"), "client": .text(client), "action": .text("leave")])
        }
    }

    /// Follows the power plan: the view's "plan" line, and a PLAN object in JSON when the plan changes.
    func observePlan() async {
        var last: PowerPlan?
        for await status in receiver.powerPlans() {
            state.withLock { $0.plan = status }
            guard json, status.plan != last else { continue }
            last = status.plan
            emit(["class": .text("PLAN"), "plan": .text(status.summary), "message": .text(status.choice.reason),
                  "time": .number(SimulatedSeconds.value(now))])
        }
    }

    /// Follows the hardware's power: the view's "power" line, and a POWER object in JSON at every
    /// change, timed when the change happened (on the watch's clock), whenever it is seen.
    func observePower() async {
        for await change in receiver.hardwarePowerChanges() {
            // The receiver's clock began a moment after the watch's: the change's time on the watch's.
            let at = max(now - (receiver.now - change.at), .zero)
            state.withLock { state in
                if change.power == .poweringOn { state.poweredSince = at }
                if !change.power.isPowered { state.poweredSince = nil }
                state.power = change
            }
            if json {
                var fields: [String: JSONField] = [
                    "class": .text("POWER"), "state": .text(change.power.description),
                    "reason": .text(change.reason.name), "time": .number(SimulatedSeconds.value(at)),
                ]
                if let failure = change.reason.failure { fields["message"] = .text(failure) }
                emit(fields)
            }
        }
    }

    // MARK: Output

    enum JSONField {
        case text(String)
        case number(Double)
        case numbers([Double])
    }

    /// A SIMULATOR object: the simulated receiver's own record of when it was powered (any mode but
    /// `off`), `on` and `off` in seconds on the watch's clock, to check the POWER objects against.
    func emitRecord(of hat: SimulatedHat) {
        // The hat's record is on its own clock, which began a moment after the watch's.
        let offset = now - hat.receiver.now
        var on: [Double] = []
        var off: [Double] = []
        var powered = false
        for change in hat.receiver.modeChanges where (change.mode != .off) != powered {
            powered.toggle()
            let at = SimulatedSeconds.value(max(change.at + offset, .zero))
            if powered { on.append(at) } else { off.append(at) }
        }
        emit(["class": .text("SIMULATOR"), "on": .numbers(on), "off": .numbers(off),
              "time": .number(SimulatedSeconds.value(now))])
    }

    func emit(_ fields: [String: JSONField]) {
        let order = ["class", "client", "action", "state", "reason", "plan", "time", "message"]
        let sorted = fields.sorted {
            (order.firstIndex(of: $0.key) ?? 99, $0.key) < (order.firstIndex(of: $1.key) ?? 99, $1.key)
        }
        let body = sorted.map { key, value -> String in
            switch value {
            case .text(let text): "\"\(key)\":\"\(Self.escape(text))\""
            case .number(let number): "\"\(key)\":\(SimulatedSeconds.format(number))"
            case .numbers(let numbers):
                "\"\(key)\":[" + numbers.map(SimulatedSeconds.format).joined(separator: ",") + "]"
            }
        }
        Terminal.write(1, "{" + body.joined(separator: ",") + "}\n")
    }

    static func escape(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case let control where control.value < 0x20:
                escaped += "\\u00" + (control.value < 0x10 ? "0" : "") + String(control.value, radix: 16)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// gpsd ends its lines with CR LF; JSON lines end with LF.
    func jsonLine(_ report: String) -> String {
        var line = report
        while line.last == "\n" || line.last == "\r" || line.last == "\r\n" { line.removeLast() }
        return line + "\n"
    }

    /// Draws the view over the previous one (`replacing` lines), returns its line count.
    func render(replacing previous: Int) -> Int {
        let snapshot = state.withLock { $0 }
        let statistics = receiver.statistics
        let now = now
        var lines: [String] = []
        lines.append("gnss-hat watch  \(board.name): \(board.title)   t=\(seconds(now))"
            + (clock.rate > 1 ? " (x\(SimulatedSeconds.format(clock.rate)))" : ""))
        var power = "power    \(snapshot.power.power) (\(snapshot.power.reason.name))"
        if let since = snapshot.poweredSince { power += ", powered for \(seconds(now - since))" }
        power += "   power-ons \(statistics.powerOns), on \(seconds(statistics.timePowered)) in all"
        if let ttff = statistics.lastTimeToFirstFix { power += ", last TTFF \(seconds(ttff))" }
        lines.append(power)
        if demand != nil || snapshot.plan.map({ $0.plan != .continuous && $0.plan != .off }) == true {
            lines.append("plan     " + receiver.powerPlan.summary)
        }
        lines.append("fix      " + describe(snapshot.fix))
        if let sky = snapshot.sky {
            let distinct = sky.distinctSatellites
            var line = "sky      \(distinct.visible) in view, \(distinct.used) used"
            // A multi-band receiver lists a satellite once per signal.
            if sky.satellitesVisible != distinct.visible {
                line += " (signals: \(sky.satellitesVisible) in view, \(sky.satellitesUsed) used)"
            }
            lines.append(line)
        } else {
            lines.append("sky      -")
        }
        lines.append("clients  " + (snapshot.clients.isEmpty ? "none" : snapshot.clients.joined(separator: ", ")))
        if let failure = snapshot.failure { lines.append("error    \(failure)") }
        if let notice = snapshot.notice { lines.append("notice   \(notice)") }
        var output = previous > 0 ? "\u{1B}[\(previous)A" : ""
        for line in lines { output += "\r\u{1B}[2K" + line + "\n" }
        // Lines left over from a longer previous view are cleared.
        if previous > lines.count {
            for _ in lines.count..<previous { output += "\r\u{1B}[2K\n" }
            output += "\u{1B}[\(previous - lines.count)A"
        }
        Terminal.write(1, output)
        return lines.count
    }

    func describe(_ fix: Fix?) -> String {
        guard let fix else { return "-" }
        let mode = switch fix.mode {
        case .threeD: "3D"
        case .twoD: "2D"
        case .noFix: "no fix"
        case .unknown: "unknown"
        }
        var text = mode
        // RTK: the carrier solution, the correction age and the reference station.
        if fix.carrierSolution != .none || fix.status == .dgps {
            text += fix.carrierSolution == .none ? " DGNSS" : " \(fix.carrierSolution)"
            let details = [fix.correctionAge.map { "\(SimulatedSeconds.format($0)) s" },
                           fix.referenceStation.map { "station \($0)" }].compactMap { $0 }
            if !details.isEmpty { text += " (" + details.joined(separator: ", ") + ")" }
        }
        if let eph = fix.eph, fix.hasPosition { text += "  ±\(SimulatedSeconds.format(eph)) m" }
        if fix.hasPosition, let latitude = fix.latitude, let longitude = fix.longitude {
            text += "  " + SimulatedSeconds.coordinate(latitude, positive: "N", negative: "S")
                + "  " + SimulatedSeconds.coordinate(longitude, positive: "E", negative: "W")
            if let altitude = fix.altitudeMSL { text += "  \(SimulatedSeconds.format(altitude)) m" }
            if let speed = fix.speed { text += "  \(SimulatedSeconds.format(speed)) m/s" }
        }
        if let time = fix.time { text += "  \(time)" }
        return text
    }
}

/// The demo's clients, in receiver time: a cold start, a second client sharing the session,
/// both leaving (linger, then off), a later client (a hot start), and off again.
enum DemoScript {
    struct Step {
        var at: Duration
        var client: String
        var join: Bool
    }

    static let steps: [Step] = [
        Step(at: .seconds(0), client: "A", join: true),
        Step(at: .seconds(35), client: "B", join: true),
        Step(at: .seconds(45), client: "A", join: false),
        Step(at: .seconds(55), client: "B", join: false),
        Step(at: .seconds(75), client: "C", join: true),
        Step(at: .seconds(90), client: "C", join: false),
    ]
}

/// Number formatting without Foundation's formatters.
enum SimulatedSeconds {
    static func tenths(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 10 + attoseconds / 100_000_000_000_000_000
    }

    static func value(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// One decimal (two below 10).
    static func format(_ value: Double) -> String {
        let decimals = abs(value) < 10 ? 2 : 1
        let scale = decimals == 2 ? 100.0 : 10.0
        let scaled = Int64((abs(value) * scale).rounded())
        let whole = scaled / Int64(scale)
        var fraction = String(scaled % Int64(scale))
        while fraction.count < decimals { fraction = "0" + fraction }
        return (value < 0 && scaled != 0 ? "-" : "") + "\(whole).\(fraction)"
    }

    /// Degrees with six decimals and a hemisphere letter.
    static func coordinate(_ degrees: Double, positive: String, negative: String) -> String {
        let micro = Int64((abs(degrees) * 1_000_000).rounded())
        var fraction = String(micro % 1_000_000)
        while fraction.count < 6 { fraction = "0" + fraction }
        return "\(micro / 1_000_000).\(fraction) " + (degrees < 0 ? negative : positive)
    }
}
