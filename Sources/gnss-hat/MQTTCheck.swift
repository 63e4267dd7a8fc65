// `gnss-hat mqtt-check URL`: connects to a broker as `serve --mqtt` will, says whether it was
// accepted (or why not), lists the consumers whose retained demand would power this device's
// receiver, and disconnects. It powers nothing.
import MQTT
import LinuxSystem

enum MQTTCheckCommand: Subcommand {
    static let spec = CommandSpec(
        name: "mqtt-check",
        summary: "connect to an MQTT broker, report whether it accepts us, list the consumers present, disconnect",
        arguments: "mqtt://[USER@]HOST[:PORT]|mqtts://...",
        argumentCount: 1...1,
        options: [
            .value("mqtt-password-file", "FILE", "the password, first line of FILE (never on the command line)"),
            .value("mqtt-ca", "FILE", "PEM certificate authorities for mqtts:// (default: the system's)"),
            .value("mqtt-device", "NAME", "the device name in topics (default: the host name)"),
        ],
        details: """
            Exit status 0 when the broker accepted the connection, 1 when it refused it or could not be
            reached (the reason is printed), 2 for a bad URL. It waits up to 10 s for the broker and, once
            connected, 2 s for the retained demand messages on gnss-hat/DEVICE/demand/+.
            example: gnss-hat mqtt-check --mqtt-password-file /etc/gnss-hat/mqtt-password mqtts://pi1@broker.lan
            """
    )

    static func run(_ arguments: ParsedArguments) async throws {
        let broker: BrokerAddress
        let device: DeviceName
        var password: String?
        do {
            broker = try BrokerAddress(url: arguments.arguments[0])
            device = try arguments.value("mqtt-device").map { name throws(MQTTConfigurationError) in
                try DeviceName(name)
            } ?? DeviceName.hostName()
            password = try arguments.value("mqtt-password-file").map { path throws(MQTTConfigurationError) in
                try MQTTConfiguration.readPassword(from: path)
            }
        } catch {
            throw CommandFailure(.usage, "\(error)")
        }
        let topics = MQTTTopics(device: device)
        let configuration = MQTTConfiguration(
            broker: broker, password: password, caFile: arguments.value("mqtt-ca"),
            clientID: "gnss-hat-check-\(device)")
        do {
            try configuration.validate()
        } catch {
            throw CommandFailure(.usage, "\(error)")
        }
        let client = try MQTTClient(configuration: configuration)
        defer { client.stop() }
        try client.subscribe(topics.demandFilter)
        try client.start()
        var presence = PresenceMachine(topics: topics)
        var libraryLog: [String] = []
        let start = ContinuousClock.now
        var subscribedAt: ContinuousClock.Instant?
        // The stream delivers as events come; a watchdog task ends the wait at the limits.
        let deadline = Task {
            try? await TimerThreadClock().sleep(for: .seconds(10))
            client.stop()
        }
        defer { deadline.cancel() }
        var connected = false
        eventLoop: for await event in client.events {
            switch event {
            case .connection(.connected):
                connected = true
                StandardStream.output.write("connected to \(broker) as \(configuration.clientID)\n")
            case let .connection(.refused(_, error, _)), let .connection(.attemptFailed(_, error, _)):
                let detail = libraryLog.last.map { " (\($0))" } ?? ""
                throw CommandFailure(.failure, "\(broker): \(error)\(detail)")
            case .connection(.connectionLost):
                throw CommandFailure(.failure, "\(broker): the connection was lost")
            case let .subscribed(_, refusal):
                if let refusal { throw CommandFailure(.failure, "\(topics.demandFilter): \(refusal)") }
                subscribedAt = .now
                Task {
                    try? await TimerThreadClock().sleep(for: .seconds(2))
                    client.stop()
                }
            case let .message(message):
                for action in presence.received(topic: message.topic, payload: message.payload) {
                    if case let .rejected(consumer, _, reason) = action {
                        StandardStream.output.write("consumer \(consumer): ignored: \(reason)\n")
                    }
                }
            case let .libraryLog(text):
                libraryLog.append(text)
            case .acknowledged:
                break
            }
            if let subscribedAt, ContinuousClock.now - subscribedAt > .seconds(2) { break eventLoop }
        }
        guard connected else {
            throw CommandFailure(.failure, "\(broker): no answer within \(ContinuousClock.now - start)")
        }
        let consumers = presence.consumers.sorted { $0.key < $1.key }
        StandardStream.output.write("consumers present on \(topics.demandFilter): \(consumers.count)\n")
        for (name, demand) in consumers {
            StandardStream.output.write("  \(name)" + (demand.interval.map { " (a fix every \($0) s)" } ?? "") + "\n")
        }
    }
}
