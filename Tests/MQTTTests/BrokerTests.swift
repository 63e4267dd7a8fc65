import Foundation
import Glibc
import Testing
import TestSupport

@testable import MQTT

/// MQTTClient against a real Mosquitto broker each test starts on free loopback ports.
@Suite(.serialized) struct BrokerTests {
    @Test func publishesWithQoS1AndReportsTheAcknowledgement() async throws {
        let broker = try TestBroker()
        let client = try MQTTClient(configuration: broker.configuration(clientID: "ack"))
        let log = EventLog(client)
        try client.start()
        try await log.first("connection") { $0.isConnected }
        #expect(client.isConnected)
        try client.publish(OutgoingMessage(topic: "test/allowed/ack", text: "one", retain: true), token: 41)
        try client.publish(OutgoingMessage(topic: "test/allowed/ack", text: "two", retain: true), token: 42)
        let second = try await log.first("PUBACK of 42") { $0.acknowledges(42) }
        #expect(second.acknowledgementRefusal == nil)
        try await log.first("PUBACK of 41") { $0.acknowledges(41) }
        #expect(client.unacknowledgedCount == 0)
        #expect(try broker.subscribeOnce("test/allowed/ack") == ["two"])
        client.stop()
    }

    @Test func theBrokerPublishesTheWillWhenTheConnectionDies() async throws {
        let broker = try TestBroker()
        // A relay the test can kill stands between client and broker: its death is, to the broker, the
        // client's connection dying without a DISCONNECT, as when the process is killed.
        let relayPort = try freeLoopbackPort()
        let relay = try Daemon("relay", executable: URL(fileURLWithPath: "/usr/bin/python3"),
                               ["-u", "-c", tcpRelay, "\(relayPort)", "\(broker.port)"])
        try relay.waitForLine(containing: "listening")
        let status = "gnss-hat/will/status"
        let configuration = try broker.configuration(
            clientID: "will", url: "mqtt://\(brokerUser)@127.0.0.1:\(relayPort)",
            will: OutgoingMessage(topic: status, text: "offline", retain: true))
        let client = try MQTTClient(configuration: configuration)
        let log = EventLog(client)
        try client.start()
        try await log.first("connection") { $0.isConnected }
        try client.publish(OutgoingMessage(topic: status, text: "online", retain: true), token: 1)
        try await log.first("PUBACK") { $0.acknowledges(1) }
        let watcher = try broker.subscriber(status)
        try watcher.waitForLine(containing: "\(status) online")
        relay.stop(signal: SIGKILL)
        try watcher.waitForLine(containing: "\(status) offline")
        try await log.first("the lost connection") { $0.isConnectionLost }
        client.stop()
        watcher.stop()
    }

    @Test func aCleanStopSendsNoWill() async throws {
        let broker = try TestBroker()
        let status = "gnss-hat/clean/status"
        let client = try MQTTClient(configuration: broker.configuration(
            clientID: "clean", will: OutgoingMessage(topic: status, text: "offline", retain: true)))
        let log = EventLog(client)
        try client.start()
        try await log.first("connection") { $0.isConnected }
        try client.publish(OutgoingMessage(topic: status, text: "online", retain: true), token: 1)
        try await log.first("PUBACK") { $0.acknowledges(1) }
        client.stop()
        #expect(try broker.subscribeOnce(status) == ["online"])
    }

    @Test func connectsOverTLSWithTheTestCA() async throws {
        let broker = try TestBroker()
        let client = try MQTTClient(configuration: broker.configuration(
            clientID: "tls", url: "mqtts://\(brokerUser)@localhost:\(broker.tlsPort)",
            caFile: broker.certificates.ca))
        let log = EventLog(client)
        try client.start()
        try await log.first("connection") { $0.isConnected }
        try client.publish(OutgoingMessage(topic: "test/allowed/tls", text: "secret", retain: true), token: 7)
        try await log.first("PUBACK") { $0.acknowledges(7) }
        client.stop()
        #expect(try broker.subscribeOnce("test/allowed/tls") == ["secret"])
    }

    @Test func refusesABrokerTheCADidNotSign() async throws {
        let broker = try TestBroker()
        let client = try MQTTClient(configuration: broker.configuration(
            clientID: "wrong-ca", url: "mqtts://\(brokerUser)@localhost:\(broker.tlsPort)",
            caFile: broker.certificates.wrongCA))
        let log = EventLog(client)
        try client.start()
        let failure = try await log.first("a failed attempt") { $0.attemptFailure != nil }
        let error = try #require(failure.attemptFailure)
        #expect(error.isAuthorisationFailure, "\(error)")
        // libmosquitto says why in its log: OpenSSL's certificate verification failed.
        try await log.first("the TLS error in libmosquitto's log") {
            if case let .libraryLog(text) = $0 { return text.contains("certificate verify failed") }
            return false
        }
        #expect(!client.isConnected)
        client.stop()
        #expect(!log.all.contains { $0.isConnected })
    }

    @Test func aWrongPasswordIsOneRefusalPerAttemptWithBackOff() async throws {
        let broker = try TestBroker()
        let client = try MQTTClient(configuration: broker.configuration(clientID: "wrong", password: "wrong"))
        let log = EventLog(client)
        try client.start()
        try await log.first("a third refusal", skip: 2) { $0.refusal != nil }
        client.stop()
        let refusals = log.all.compactMap { event -> (Int, Duration, MQTTError)? in
            if case let .connection(.refused(attempt, error, retryIn)) = event { return (attempt, retryIn, error) }
            return nil
        }
        #expect(refusals.prefix(3).map(\.0) == [1, 2, 3])
        #expect(refusals.prefix(3).map(\.1) == [.milliseconds(100), .milliseconds(200), .milliseconds(400)])
        for (_, _, error) in refusals {
            #expect(error.code == .connectionRefused(.badUsernameOrPassword) || error.code
                        == .connectionRefused(.notAuthorized), "\(error)")
            #expect(error.isAuthorisationFailure)
        }
        #expect(!log.all.contains { $0.isConnected })
    }

    @Test func anACLThatDeniesATopicRefusesTheMessage() async throws {
        let broker = try TestBroker()
        let client = try MQTTClient(configuration: broker.configuration(clientID: "acl"))
        let log = EventLog(client)
        try client.subscribe("test/allowed/echo")
        try client.start()
        let allowed = try await log.first("SUBACK") { $0.subscribes("test/allowed/echo") }
        #expect(allowed.subscriptionRefusal == nil)
        // MQTT 5's PUBACK says the ACL refused it (a 3.1.1 broker would acknowledge and drop it).
        try client.publish(OutgoingMessage(topic: "test/denied/x", text: "no"), token: 1)
        let refused = try await log.first("PUBACK of the denied message") { $0.acknowledges(1) }
        #expect(refused.acknowledgementRefusal?.code == .publishRefused(.notAuthorized))
        try client.publish(OutgoingMessage(topic: "test/allowed/echo", text: "yes"), token: 2)
        let echo = try await log.first("the echo") { $0.message?.topic == "test/allowed/echo" }
        #expect(echo.message?.payload == Array("yes".utf8))
        #expect(log.all.first { $0.acknowledges(2) }?.acknowledgementRefusal == nil)
        client.stop()
    }

    /// libmosquitto refuses a publish while disconnected (MOSQ_ERR_NO_CONN, QoS 1 too), so the journal
    /// is what keeps messages across an outage: appended first, removed on PUBACK, the rest published
    /// again after the reconnect.
    @Test func reconnectsAfterTheBrokerRestartsAndTheJournalKeepsWhatCouldNotBeSent() async throws {
        let broker = try TestBroker()
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let journal = try Journal(directory: state.path)
        let client = try MQTTClient(configuration: broker.configuration(clientID: "restart"))
        let log = EventLog(client)
        try client.subscribe("test/allowed/restart/#")
        try client.start()
        try await log.first("connection") { $0.isConnected }
        func send(_ index: Int) throws {
            let message = OutgoingMessage(topic: "test/allowed/restart/\(index)", text: "fix \(index)", retain: true)
            let sequence = try journal.append(message)
            do {
                try client.publish(message, token: sequence)
            } catch {
                // Not connected: kept in the journal for the reconnect. Anything else is a failure.
                guard error.code == .library(.noConnection) else { throw error }
            }
        }
        try send(0)
        try await log.first("PUBACK of the first") { $0.acknowledges(1) }
        #expect(try journal.acknowledge(1))
        broker.stop(signal: SIGKILL)
        try await log.first("the lost connection") { $0.isConnectionLost }
        #expect(!client.isConnected)
        for index in 1...5 { try send(index) }
        #expect(journal.pending.map(\.sequence) == [2, 3, 4, 5, 6])
        #expect(throws: MQTTError.self) {
            try client.publish(OutgoingMessage(topic: "test/allowed/restart/q0", text: "lost", qos: .atMostOnce))
        }
        // Attempts against the dead broker back off (0.1 s, 0.2 s, ...) until it is back.
        try await log.first("a failed reconnect") { $0.attemptFailure != nil }
        try broker.start()
        try await log.first("the reconnection", skip: 1) { $0.isConnected }
        for record in journal.pending { try client.publish(record.message, token: record.sequence) }
        for sequence in UInt64(2)...6 {
            let ack = try await log.first("PUBACK of \(sequence)") { $0.acknowledges(sequence) }
            #expect(ack.acknowledgementRefusal == nil)
            #expect(try journal.acknowledge(sequence))
        }
        #expect(journal.pending.isEmpty)
        #expect(client.unacknowledgedCount == 0)
        // The subscription came back with the reconnect.
        try await log.first("the resubscription", skip: 1) { $0.subscribes("test/allowed/restart/#") }
        for index in 1...5 {
            #expect(try broker.subscribeOnce("test/allowed/restart/\(index)") == ["fix \(index)"])
        }
        client.stop()
    }

    @Test func presenceFollowsAPahoConsumerAndItsWill() async throws {
        let broker = try TestBroker()
        let topics = MQTTTopics(device: try DeviceName("pi1"))
        let client = try MQTTClient(configuration: broker.configuration(clientID: "presence"))
        let log = EventLog(client)
        try client.subscribe(topics.demandFilter)
        try client.start()
        try await log.first("SUBACK") { $0.subscribes(topics.demandFilter) }
        // A consumer as Python's paho-mqtt makes one: a retained demand and an empty retained will.
        let consumer = try Daemon("paho consumer", executable: URL(fileURLWithPath: "/usr/bin/python3"),
                                  ["-u", "-c", Paho.consumer, "\(broker.port)", brokerUser, brokerPassword,
                                   topics.demandPrefix + "paho", #"{"interval":600}"#])
        try consumer.waitForLine(containing: "announced")
        var presence = PresenceMachine(topics: topics)
        let announcement = try await log.first("the demand") { $0.message?.topic == topics.demandPrefix + "paho" }
        let arrival = try #require(announcement.message)
        #expect(presence.received(topic: arrival.topic, payload: arrival.payload)
                    == [.begin(consumer: "paho", demand: ConsumerDemand(interval: 600))])
        consumer.stop(signal: SIGKILL)
        let will = try await log.first("the consumer's will") {
            $0.message?.topic == topics.demandPrefix + "paho" && $0.message?.payload.isEmpty == true
        }
        let departure = try #require(will.message)
        #expect(presence.received(topic: departure.topic, payload: departure.payload) == [.end(consumer: "paho")])
        client.stop()
    }
}

/// A TCP relay: accepts on port argv[1] and copies bytes both ways to 127.0.0.1:argv[2].
private let tcpRelay = """
    import socket, sys, threading
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(sys.argv[1])))
    listener.listen(4)
    print("listening", flush=True)
    def pump(a, b):
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
        b.close()
    while True:
        client, _ = listener.accept()
        upstream = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
    """
