import GNSSHat
import GNSSProtocol
import Testing

@testable import MQTT

/// The bridge's decisions, driven with no threads, no broker and no receiver.
@Suite struct BridgeMachineTests {
    let topics: MQTTTopics

    init() throws {
        topics = MQTTTopics(device: try DeviceName("pi1"))
    }

    func machine(every: Duration? = nil) -> BridgeMachine {
        BridgeMachine(settings: BridgeMachine.Settings(
            topics: topics, broker: "mqtt://broker:1883", clientID: "gnss-hat-pi1", devicePath: "/dev/ttyAMA0",
            trackerID: "i1", model: "ZED-F9P", every: every))
    }

    func fix(second: Int, position: Bool = true) -> Fix {
        var fix = Fix()
        fix.time = GNSSTime(date: GNSSDate(year: 2024, month: 5, day: 6),
                            time: TimeOfDay(hour: 7, minute: 0, second: second, nanosecond: 0))
        fix.mode = position ? .threeD : .noFix
        if position {
            fix.latitude = 51.4778
            fix.longitude = -0.0014
        }
        return fix
    }

    /// A change of the hardware's power, for `demand` unless another reason is given.
    static func power(_ power: HardwarePower, _ reason: HardwarePowerChange.Reason = .demand, at: Duration = .zero)
        -> HardwarePowerChange
    {
        HardwarePowerChange(power: power, reason: reason, at: at)
    }

    static let error = MQTTError(call: "mosquitto_loop", code: .library(.connectionLost), reason: "lost")
    static let denied = MQTTError(call: "PUBACK", code: .publishRefused(.notAuthorized), reason: "Not authorized")

    func connect(_ machine: inout BridgeMachine) -> [BridgeMachine.Action] {
        machine.handle(.connection(.connected(attempt: 1), libraryLog: nil))
    }

    func lose(_ machine: inout BridgeMachine) -> [BridgeMachine.Action] {
        machine.handle(.connection(.connectionLost(error: Self.error, after: .seconds(5), retryIn: .seconds(1)),
                                   libraryLog: nil))
    }

    func published(_ actions: [BridgeMachine.Action]) -> [(topic: String, text: String, retain: Bool, token: UInt64)] {
        actions.compactMap { action in
            guard case let .publish(message, token) = action else { return nil }
            return (message.topic, String(decoding: message.payload, as: UTF8.self), message.retain, token)
        }
    }

    func logs(_ actions: [BridgeMachine.Action], _ level: BridgeLogLevel = .notice) -> [String] {
        actions.compactMap { action in
            guard case let .log(actionLevel, line) = action, actionLevel == level else { return nil }
            return line
        }
    }

    @Test func aConnectionPublishesStatusPowerAndDiscoveryThenReplaysTheJournal() throws {
        var bridge = machine()
        _ = bridge.handle(.power(Self.power(.on)))
        let actions = connect(&bridge)
        let messages = published(actions)
        #expect(messages.map(\.topic) == [
            "gnss-hat/pi1/status", "gnss-hat/pi1/power",
            "homeassistant/device_tracker/gnss-hat-pi1/location/config",
            "homeassistant/sensor/gnss-hat-pi1/satellites/config",
            "homeassistant/sensor/gnss-hat-pi1/power/config",
            "homeassistant/sensor/gnss-hat-pi1/rtk/config",
        ])
        #expect(messages.allSatisfy { $0.retain })
        #expect(messages[0].text == "online")
        #expect(messages[1].text == #"{"state":"on","powered":true,"reason":"demand"}"#)
        #expect(actions.last == .replayJournal)
        #expect(logs(actions) == ["connected to mqtt://broker:1883 as gnss-hat-pi1"])
        // Discovery is once per connection: again after a reconnect, never in between.
        #expect(published(bridge.handle(.power(Self.power(.powerSave)))).map(\.topic) == ["gnss-hat/pi1/power"])
        // A change of time alone publishes nothing; a change of reason does.
        #expect(published(bridge.handle(.power(Self.power(.powerSave, at: .seconds(9))))).isEmpty)
        #expect(published(bridge.handle(.power(Self.power(.powerSave, .dutyCycleWake)))).count == 1)
        _ = lose(&bridge)
        #expect(published(connect(&bridge)).count == 6)
    }

    @Test func fixesGoThroughTheJournalPublishedOnlyWhileConnected() throws {
        var bridge = machine()
        let offline = bridge.handle(.fix(fix(second: 1), now: .seconds(1)))
        guard case let .journal(messages, publish)? = offline.first else {
            Issue.record("\(offline)")
            return
        }
        #expect(!publish)
        #expect(messages.map(\.topic) == ["gnss-hat/pi1/tpv", "owntracks/gnss-hat/pi1"])
        #expect(messages.allSatisfy { $0.qos == .atLeastOnce && $0.retain })
        #expect(String(decoding: messages[0].payload, as: UTF8.self)
                    == String(decoding: GPSDPayload.tpv(fix(second: 1), device: "/dev/ttyAMA0"), as: UTF8.self))
        _ = connect(&bridge)
        let online = bridge.handle(.fix(fix(second: 2, position: false), now: .seconds(2)))
        // No position: no OwnTracks message, the TPV all the same.
        guard case let .journal(noFix, true)? = online.first else {
            Issue.record("\(online)")
            return
        }
        #expect(noFix.map(\.topic) == ["gnss-hat/pi1/tpv"])
        // A sky view is of the moment: published while connected, not journaled, dropped otherwise.
        var sky = SkyView()
        sky.time = fix(second: 2).time
        #expect(published(bridge.handle(.sky(sky))).map(\.token) == [BridgeToken.sky])
        _ = lose(&bridge)
        #expect(bridge.handle(.sky(sky)).isEmpty)
    }

    @Test func appendsReachTheDiskUnlessEverythingBeforeWasAcknowledged() {
        #expect(BridgeMachine.syncsAppend(published: false, pendingBefore: 0))
        #expect(BridgeMachine.syncsAppend(published: true, pendingBefore: 1))
        #expect(!BridgeMachine.syncsAppend(published: true, pendingBefore: 0))
    }

    @Test func aLostConnectionSyncsTheJournalAndSaysSoOnce() {
        var bridge = machine()
        _ = connect(&bridge)
        let actions = lose(&bridge)
        #expect(actions.contains(.syncJournal))
        #expect(logs(actions) == [
            "lost the connection to mqtt://broker:1883 after 5 s: mosquitto_loop: lost (MOSQ_ERR_CONN_LOST); "
                + "fixes are kept in the journal; reconnecting in 1 s",
        ])
        #expect(!bridge.connected)
    }

    @Test func aRefusalIsOneLinePerAttemptWithItsRetry() {
        var bridge = machine()
        let refusal = MQTTError(call: "CONNACK", code: .connectionRefused(.badUsernameOrPassword),
                                reason: "Bad user name or password")
        var lines: [String] = []
        for (attempt, delay) in [(1, 1), (2, 2), (3, 4)] {
            let refused = ReconnectPolicy.Report.refused(attempt: attempt, error: refusal, retryIn: .seconds(delay))
            lines += logs(bridge.handle(.connection(refused, libraryLog: nil)))
        }
        #expect(lines.count == 3)
        #expect(lines[2] == "mqtt://broker:1883, attempt 3: the broker refused the connection: "
            + "Bad user name or password (CONNACK 0x86) (check the user in the URL and --mqtt-password-file); "
            + "next attempt in 4 s")
        let tls = MQTTError(call: "mosquitto_connect (attempt 1)", code: .library(.tls), reason: "TLS error")
        let failed = logs(bridge.handle(.connection(.attemptFailed(attempt: 1, error: tls, retryIn: .seconds(1)),
                                                    libraryLog: "certificate verify failed")))
        #expect(failed.count == 1 && failed[0].contains("(certificate verify failed)"), "\(failed)")
    }

    @Test func acknowledgementsRemoveJournalRecordsAndRefusalsAreOneLinePerTopicPerConnection() {
        var bridge = machine()
        _ = connect(&bridge)
        #expect(bridge.handle(.acknowledged(token: 7, refusal: nil)) == [.acknowledge(sequence: 7, refused: nil)])
        #expect(bridge.handle(.acknowledged(token: 8, refusal: Self.denied))
                    == [.acknowledge(sequence: 8, refused: Self.denied)])
        let first = logs(bridge.handle(.journalRecordRefused(topic: "owntracks/gnss-hat/pi1", Self.denied)))
        #expect(first.count == 1 && first[0].contains("refuses messages on owntracks/gnss-hat/pi1"))
        #expect(bridge.handle(.journalRecordRefused(topic: "owntracks/gnss-hat/pi1", Self.denied)).isEmpty)
        #expect(logs(bridge.handle(.acknowledged(token: BridgeToken.sky, refusal: Self.denied))).count == 1)
        #expect(bridge.handle(.acknowledged(token: BridgeToken.sky, refusal: Self.denied)).isEmpty)
        _ = lose(&bridge)
        _ = connect(&bridge)
        #expect(logs(bridge.handle(.journalRecordRefused(topic: "owntracks/gnss-hat/pi1", Self.denied))).count == 1)
    }

    @Test func eachPresentConsumerIsOneClaimUntilItsEmptyMessage() {
        var bridge = machine()
        _ = connect(&bridge)
        let demand = topics.demandPrefix + "phone"
        let arrived = bridge.handle(.message(IncomingMessage(topic: demand, payload: Array(#"{"interval":600}"#.utf8),
                                                             retained: true)))
        #expect(arrived.contains(.beginClaim(.consumer("phone"), ConsumerDemand(interval: 600), generation: 1)))
        let changed = bridge.handle(
            .message(IncomingMessage(topic: demand, payload: Array("{}".utf8), retained: false)))
        #expect(changed.contains(.updateClaim(.consumer("phone"), ConsumerDemand())))
        let gone = bridge.handle(.message(IncomingMessage(topic: demand, payload: [], retained: false)))
        #expect(gone.contains(.endClaim(.consumer("phone"))))
        #expect(bridge.claims.isEmpty)
        let bad = bridge.handle(.message(IncomingMessage(topic: demand, payload: Array("on".utf8), retained: true)))
        #expect(logs(bad).count == 1 && !bad.contains { if case .beginClaim = $0 { true } else { false } })
    }

    @Test func theDemandSubscriptionIsProbedAndSilenceIsOneClearLine() throws {
        var bridge = machine()
        _ = connect(&bridge)
        let actions = bridge.handle(.subscribed(filter: topics.demandFilter, refusal: nil))
        let probe = try #require(published(actions).first)
        #expect(probe.topic == "gnss-hat/pi1/demand/gnss-hat-bridge-probe" && probe.text.isEmpty && !probe.retain)
        #expect(actions.contains(.arm(.probe, generation: 1, delay: .seconds(5))))
        let silence = logs(bridge.handle(.timerFired(.probe, generation: 1, now: .zero)))
        #expect(silence.count == 1 && silence[0].contains("delivered nothing on gnss-hat/pi1/demand/+"), "\(silence)")
        // The probe coming back means the level is delivered: no line.
        _ = lose(&bridge)
        _ = connect(&bridge)
        _ = bridge.handle(.subscribed(filter: topics.demandFilter, refusal: nil))
        let echo = IncomingMessage(topic: "gnss-hat/pi1/demand/gnss-hat-bridge-probe", payload: [], retained: false)
        #expect(bridge.handle(.message(echo)).isEmpty)
        #expect(bridge.handle(.timerFired(.probe, generation: 2, now: .zero)).isEmpty)
        // A refused probe, or a refused subscription (brokers that check it), is one line too.
        #expect(logs(bridge.handle(.acknowledged(token: BridgeToken.probe, refusal: Self.denied))).count == 1)
        let refusal = MQTTError(call: "SUBACK", code: .subscriptionRefused(.notAuthorized), reason: "Not authorized")
        let refused = bridge.handle(.subscribed(filter: topics.demandFilter, refusal: refusal))
        #expect(logs(refused).count == 1 && published(refused).isEmpty)
    }

    @Test func afterAReconnectTheSweepEndsConsumersNotHeardFrom() {
        var bridge = machine()
        _ = connect(&bridge)
        for name in ["a", "b"] {
            _ = bridge.handle(.message(IncomingMessage(topic: topics.demandPrefix + name, payload: Array("{}".utf8),
                                                       retained: true)))
        }
        _ = lose(&bridge)
        #expect(bridge.claims.count == 2)
        _ = connect(&bridge)
        let subscribed = bridge.handle(.subscribed(filter: topics.demandFilter, refusal: nil))
        guard let sweep = subscribed.compactMap({ action -> UInt64? in
            if case let .arm(.sweep, generation, delay) = action, delay == .seconds(2) { return generation }
            return nil
        }).first else {
            Issue.record("no sweep in \(subscribed)")
            return
        }
        _ = bridge.handle(.message(IncomingMessage(topic: topics.demandPrefix + "a", payload: Array("{}".utf8),
                                                   retained: true)))
        #expect(bridge.handle(.timerFired(.sweep, generation: sweep, now: .zero)).contains(.endClaim(.consumer("b"))))
        #expect(Array(bridge.claims.keys) == [.consumer("a")])
    }

    @Test func theStandingDemandClaimsUntilAPositionThenWaitsForTheNextInterval() {
        var bridge = machine(every: .seconds(600))
        #expect(bridge.handle(.started(now: .seconds(10))).contains(
            .beginClaim(.standing, ConsumerDemand(interval: 600), generation: 1)))
        // A fix without a position does not meet it.
        #expect(!bridge.handle(.fix(fix(second: 1, position: false), now: .seconds(30))).contains(.endClaim(.standing)))
        let met = bridge.handle(.fix(fix(second: 2), now: .seconds(40)))
        #expect(met.contains(.endClaim(.standing)))
        #expect(met.contains(.armAt(.standing, generation: 1, deadline: .seconds(610))))
        #expect(bridge.handle(.timerFired(.standing, generation: 1, now: .seconds(610))).contains(
            .beginClaim(.standing, ConsumerDemand(interval: 600), generation: 2)))
        // A fix that took longer than the interval: the next claim is due already (fires at once).
        let late = bridge.handle(.fix(fix(second: 3), now: .seconds(1300)))
        #expect(late.contains(.armAt(.standing, generation: 2, deadline: .seconds(1210))))
    }

    @Test func aReceiverFailureClaimsAgainAfterABackOffThatResetsOncePowered() {
        var bridge = machine()
        _ = connect(&bridge)
        _ = bridge.handle(.message(IncomingMessage(topic: topics.demandPrefix + "a", payload: Array("{}".utf8),
                                                   retained: true)))
        let ended = bridge.handle(.claimEnded(.consumer("a"), generation: 1, failure: "no response"))
        #expect(ended.contains(.arm(.claimRetry, generation: 1, delay: .seconds(1))))
        // A stale end (an older generation) changes nothing.
        #expect(bridge.handle(.claimEnded(.consumer("a"), generation: 1, failure: "no response")).isEmpty)
        #expect(bridge.handle(.timerFired(.claimRetry, generation: 1, now: .seconds(1)))
                    == [.beginClaim(.consumer("a"), ConsumerDemand(), generation: 2)])
        let again = bridge.handle(.claimEnded(.consumer("a"), generation: 2, failure: "no response"))
        #expect(again.contains(.arm(.claimRetry, generation: 2, delay: .seconds(2))))
        _ = bridge.handle(.timerFired(.claimRetry, generation: 2, now: .seconds(3)))
        _ = bridge.handle(.power(Self.power(.on)))
        let afterOn = bridge.handle(.claimEnded(.consumer("a"), generation: 3, failure: "device gone"))
        #expect(afterOn.contains(.arm(.claimRetry, generation: 3, delay: .seconds(1))))
        // A consumer that left meanwhile is not claimed again; a shut-down receiver is not retried.
        _ = bridge.handle(.message(IncomingMessage(topic: topics.demandPrefix + "a", payload: [], retained: false)))
        #expect(bridge.handle(.timerFired(.claimRetry, generation: 3, now: .seconds(5))).isEmpty)
        _ = bridge.handle(.message(IncomingMessage(topic: topics.demandPrefix + "b", payload: Array("{}".utf8),
                                                   retained: true)))
        #expect(bridge.handle(.claimEnded(.consumer("b"), generation: 4, failure: nil)).isEmpty)
    }

    @Test func stoppingEndsEveryClaimSaysOfflineAndFinishesOnItsAcknowledgement() {
        var bridge = machine(every: .seconds(60))
        _ = bridge.handle(.started(now: .zero))
        _ = connect(&bridge)
        _ = bridge.handle(.power(Self.power(.on)))
        _ = bridge.handle(.message(IncomingMessage(topic: topics.demandPrefix + "a", payload: Array("{}".utf8),
                                                   retained: true)))
        let actions = bridge.handle(.stop(power: Self.power(.off, .lingerEnded)))
        #expect(actions.contains(.endClaim(.consumer("a"))) && actions.contains(.endClaim(.standing)))
        #expect(published(actions).map(\.text)
                    == [#"{"state":"off","powered":false,"reason":"linger ended"}"#, "offline"])
        #expect(published(actions).last?.token == BridgeToken.offline)
        #expect(!actions.contains(.finished))
        #expect(bridge.handle(.fix(fix(second: 1), now: .seconds(1))).isEmpty)
        #expect(bridge.handle(.acknowledged(token: BridgeToken.offline, refusal: nil)) == [.syncJournal, .finished])
        #expect(bridge.handle(.connection(.connected(attempt: 2), libraryLog: nil)).isEmpty)
    }

    @Test func stoppingWhileDisconnectedFinishesAtOnceAndTheLimitEndsAWaitForTheBroker() {
        var away = machine()
        #expect(away.handle(.stop(power: Self.power(.off, .initial))) == [.syncJournal, .finished])
        var slow = machine()
        _ = connect(&slow)
        let actions = slow.handle(.stop(power: Self.power(.off, .initial)))
        #expect(actions.contains(.arm(.stopLimit, generation: 1, delay: .seconds(2))))
        #expect(slow.handle(.timerFired(.stopLimit, generation: 1, now: .zero)) == [.syncJournal, .finished])
    }
}
