// `gnss-hat serve`: the gpsd-compatible service on a board, its receiver powered only while
// clients watch.

import GNSSHat
import GNSSHatSimulator
import GPSD
import GPSDProtocol
import LinuxSystem
import MQTT

/// The `serve` subcommand.
enum ServeCommand: Subcommand {
    static let spec = CommandSpec(
        name: "serve",
        summary: "a gpsd-compatible service; the receiver is on only while clients watch",
        options: [
            .value("listen", "ADDR:PORT", "TCP address, repeatable (default: 127.0.0.1:2947; [::1]:2947 for IPv6)",
                   repeatable: true),
            .value("unix", "PATH", "also listen on a Unix socket", repeatable: true),
            .value("min-off", "SECONDS", "keep the receiver off at least this long between sessions (default: the board's)"),
            .flag("keep-on", "keep the receiver on with no watcher (time service)"),
            .flag("allow-device-changes", "let ?DEVICE= change the receiver (default: read-only)"),
            .value("chrony-socket", "PATH", "feed chrony's SOCK refclock at PATH with the serial time (keeps it on)"),
            .value("chrony-pps-socket", "PATH", "feed chrony's SOCK refclock at PATH with PPS edges (keeps it on)"),
            .flag("early-position", "publish a TPV as soon as an epoch's position is known"),
            .value("nice", "N", "scheduling priority, -20 to 19, as gpsd's (default: -10 where allowed)"),
            .value("speed", "N", "run a simulated board's clock N times faster (1 to 1000; soak and fault tests)"),
        ] + MQTTOptions.specs + CorrectionsLink.specs,
        details: """
            Speaks gpsd's JSON protocol (gpspipe, cgps, python3-gps, chrony, ...) for one board. --linger defaults
            to 5 s here; --verbose logs clients, power and errors to standard error, and at the stop what the
            receiver and the bridge counted. Runs until SIGTERM or SIGINT (exit status 0; 4 if the receiver could
            not be switched off).
            """ + "\n" + MQTTOptions.details + "\n" + CorrectionsLink.details + "\n" + """
            example: gnss-hat serve --board uputronics-gps-rtc --listen 0.0.0.0:2947
            example: gnss-hat serve --mqtt mqtts://pi1@broker.lan --mqtt-password-file /etc/gnss-hat/mqtt-password
            """
    )

    static func run(_ arguments: ParsedArguments) async throws {
        let listen = try listenAddresses(arguments)
        let linger = try arguments.seconds("linger") ?? .seconds(5)
        let niceOption = try arguments.number("nice", in: -20...19)
        if let niceOption, niceOption != niceOption.rounded() {
            throw UsageError("--nice needs a whole number from -20 to 19, not '\(arguments.value("nice") ?? "")'")
        }
        let minimumOff = try arguments.seconds("min-off")
        let speed = try arguments.number("speed", in: 1...1000)
        let ntrip = try CorrectionsLink.configuration(arguments)
        let verbose = arguments.verbose
        // The bridge's problems (a broker that refuses us, one that went away) are always printed;
        // what it does (consumers, power) with --verbose.
        let mqtt = try MQTTOptions.configuration(arguments) { level, line in
            if level == .notice || verbose { standardError("gnss-hat serve: mqtt: \(line)") }
        }
        // Handle SIGTERM and SIGINT before any thread starts, so none of them dies of it.
        let signals: SignalWatcher
        do {
            signals = try SignalWatcher()
        } catch {
            throw CommandFailure(.failure, "cannot handle signals: \(error)")
        }
        let log: @Sendable (String) -> Void = { line in if verbose { standardError("gnss-hat serve: \(line)") } }
        setPriority(niceOption, log: log)
        var board = try BoardChoice.load(arguments)
        if let minimumOff { board.power.minimumOffTime = minimumOff }
        let (receiver, clock) = try makeReceiver(board: board, speed: speed, linger: linger, arguments)
        let corrections = CorrectionsLink.attach(ntrip, to: receiver, clock: clock) { line in
            standardError("gnss-hat serve: \(line)")
        }
        let source = GPSDSource.receiver(receiver)
        let server = try makeServer(source: source, listen: listen, log: log, arguments)
        let bridge = try await startBridge(mqtt, receiver: receiver, clock: clock)
        standardError("gnss-hat serve: board \(board.name), device \(source.device.path), listening on "
            + server.addresses.map(\.description).joined(separator: ", "))
        // The loop gets a thread of its own rather than blocking one of the few task threads.
        do {
            try server.start(signals: signals)
        } catch {
            await bridge?.stop()
            throw CommandFailure(.failure, "\(error)")
        }
        await server.waitUntilStopped()
        // Whose retained demand still held the receiver (the bridge's stop ends them all).
        let present = bridge?.statistics.consumers ?? [:]
        await corrections?.stop(receiver)
        // The receiver is off: the bridge says so, says offline, and keeps what the broker lacks.
        await bridge?.stop()
        if verbose { summarize(receiver.statistics, bridge?.statistics, consumersAtStop: present) }
        // The last power-off may have failed (an output line that could not be driven even after
        // its retries): then the receiver may still draw power, and the exit status says so.
        if let failure = receiver.statistics.powerOffFailure {
            throw CommandFailure(.hardwareUnavailable, "stopped, but the receiver may still be on: \(failure)")
        }
        standardError("gnss-hat serve: stopped; receiver off")
    }

    /// `--listen` and `--unix`, with gpsd's 127.0.0.1:2947 first when no TCP address is given.
    static func listenAddresses(_ arguments: ParsedArguments) throws -> [SocketAddress] {
        var listen: [SocketAddress] = []
        for text in arguments.values["listen"] ?? [] {
            do {
                listen.append(try SocketAddress(parsing: text, defaultPort: 2947))
            } catch {
                throw UsageError("--listen: \(error)")
            }
        }
        for path in arguments.values["unix"] ?? [] { listen.append(.unix(path)) }
        if !listen.contains(where: { $0.port != nil }) {
            listen.insert(.ipv4("127.0.0.1", port: 2947), at: 0)
        }
        return listen
    }

    /// `--nice`, or nice -10 by default.
    static func setPriority(_ niceOption: Double?, log: @Sendable (String) -> Void) {
        // Like gpsd: a sentence's moment should not wait behind other work. Unprivileged, the
        // default is kept quietly (a systemd unit's Nice= sets it instead).
        let nice = Int32(niceOption ?? -10)
        do {
            try SchedulingPriority.setNice(nice)
        } catch {
            let line = "cannot set the scheduling priority to nice \(nice): \(error)"
            if niceOption != nil { standardError("gnss-hat serve: \(line)") } else { log(line) }
        }
    }

    /// The service's Receiver on `board`, on a clock `speed` times faster when given (the receiver, its
    /// linger and the bridge's standing demand run on it; a board whose time is not simulated refuses it),
    /// else on the receiver's own default clock.
    static func makeReceiver(board: Board, speed: Double?, linger: Duration, _ arguments: ParsedArguments) throws
        -> (Receiver, AcceleratedClock?)
    {
        // --early-position: the receiver hands out each epoch's provisional fix, which the source reports.
        // The service runs in real time, so a simulated receiver tells the system's UTC (a chrony
        // fed from it must not be a fixed day off).
        // The aiding state (a board whose power-off cuts the supply restarts aided, not cold).
        let stateDirectory = StateDirectory.resolve(
            arguments.value("state-dir"), environment: FileSystem.environment, isRoot: FileSystem.isSuperuser)
        let options = ReceiverOptions(
            linger: linger, provisionalFixes: arguments.flag("early-position"), stateDirectory: stateDirectory)
        let hardware = CommandHardware.providers(simulatedDayStartsNow: true)
        guard let speed else { return (try Receiver(board: board, options: options, hardware: hardware), nil) }
        let clock = try CommandHardware.clock(speed: speed, board: board, providers: hardware)
        let paced = CommandHardware.board(board, at: clock.rate)
        return (try Receiver(board: paced, options: options, hardware: hardware, clock: clock), clock)
    }

    /// The gpsd service on `listen`, with the options that shape it.
    static func makeServer(
        source: GPSDSource, listen: [SocketAddress], log: @escaping @Sendable (String) -> Void,
        _ arguments: ParsedArguments
    ) throws -> GPSDServer {
        do {
            return try GPSDServer(source: source, configuration: GPSDServerConfiguration(
                listen: listen,
                allowDeviceChanges: arguments.flag("allow-device-changes"),
                keepOn: arguments.flag("keep-on"),
                chronySocket: arguments.value("chrony-socket"),
                chronyPPSSocket: arguments.value("chrony-pps-socket"),
                log: log
            ))
        } catch {
            throw CommandFailure(.failure, "\(error)")
        }
    }

    /// The MQTT bridge, started, when `--mqtt` asks for one.
    static func startBridge(
        _ mqtt: MQTTBridgeConfiguration?, receiver: Receiver, clock: AcceleratedClock?
    ) async throws -> MQTTBridge? {
        // The bridge starts before the service serves, and never waits for the broker: one that is
        // down or refuses us is retried in the background while gpsd clients are served.
        guard let mqtt else { return nil }
        let bridge: MQTTBridge
        do {
            bridge = try clock.map { clock in
                try MQTTBridge(receiver: receiver, configuration: mqtt, clock: clock)
            } ?? MQTTBridge(receiver: receiver, configuration: mqtt)
            try bridge.start()
        } catch {
            await receiver.shutdown()
            throw CommandFailure(.failure, "--mqtt: \(error)")
        }
        standardError("gnss-hat serve: mqtt: publishing to \(mqtt.connection.broker) as "
            + "\(mqtt.topics.device), the journal in \(mqtt.journalDirectory)")
        return bridge
    }

    /// What the run counted, for a soak or a fault test reading the log: the receiver's power-ons and
    /// time powered (on its clock: simulated time under --speed), what the bridge journaled, the
    /// broker acknowledged and the journal still holds, and the consumers present at the stop (a
    /// demand nobody cleared keeps the receiver on: a forgotten `mosquitto_pub -r`, a consumer that
    /// died before its will was set).
    static func summarize(
        _ receiver: ReceiverStatistics, _ bridge: MQTTBridgeStatistics?, consumersAtStop: [String: ConsumerDemand]
    ) {
        let firstFixes = receiver.timesToFirstFix.compactMap { $0 }.sorted()
        let median = firstFixes.isEmpty ? "none" : SimulatedSeconds.format(
            SimulatedSeconds.value(firstFixes[firstFixes.count / 2])) + " s"
        standardError("gnss-hat serve: receiver: \(receiver.powerOns) power-ons (\(receiver.failedPowerOns) failed), "
            + "powered for \(SimulatedSeconds.format(SimulatedSeconds.value(receiver.timePowered))) s, "
            + "\(receiver.epochs) epochs, \(receiver.fixes) fixes with a position; median time to first fix \(median) "
            + "(of the last \(firstFixes.count) power-ons with a fix)")
        guard let bridge else { return }
        standardError("gnss-hat serve: mqtt: \(bridge.fixes) fixes journaled, \(bridge.acknowledged) records "
            + "acknowledged, \(bridge.journalPending) left in the journal, \(bridge.journalDropped) dropped by its "
            + "limits, \(bridge.refused) refused")
        standardError("gnss-hat serve: mqtt: " + describe(consumersAtStop))
    }

    /// "consumers present at the stop: 2 (a: a fix every 60 s; b)", or "...: none".
    static func describe(_ consumersAtStop: [String: ConsumerDemand]) -> String {
        guard !consumersAtStop.isEmpty else { return "consumers present at the stop: none" }
        let each = consumersAtStop.sorted { $0.key < $1.key }.map { name, demand in
            let asked = [demand.interval.map { "a fix every \($0) s" }, demand.accuracy.map { "\($0) m" }]
                .compactMap { $0 }
            return asked.isEmpty ? name : "\(name): \(asked.joined(separator: ", "))"
        }
        return "consumers present at the stop: \(consumersAtStop.count) (\(each.joined(separator: "; "))), "
            + "each a retained demand that held the receiver"
    }

    static func standardError(_ line: String) {
        StandardStream.error.write(line + "\n")
    }
}
