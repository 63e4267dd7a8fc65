import Foundation
import GNSSHat
import GNSSHatTesting
import GNSSProtocol
import Glibc
import LinuxSystem
import Signals
import Testing
import TestSupport

@testable import MQTT

/// MQTTBridge on a simulated receiver (a manual clock: simulated minutes pass in moments) and a real
/// Mosquitto broker, with mosquitto_sub and paho-mqtt as consumers and subscribers.
@Suite(.serialized, .timeLimit(.minutes(3))) struct BridgeTests {
    @Test func fixesTheReceiverMakesForALocalWatcherArriveOnEveryTopicWithEveryField() async throws {
        let broker = try TestBroker()
        let rig = try BridgeRig(broker: broker)
        let topics = rig.topics
        let watcher = try await watch(broker, ["gnss-hat/pi1/#", "owntracks/#", "homeassistant/#"])
        try rig.bridge.start()
        try await rig.wait("a connection") { $0.connected }
        #expect(try await payload(watcher, topics.status) == "online")
        // Nobody asks: time passes and the receiver stays off; the bridge publishes nothing of a fix.
        await rig.driver.advance(by: .seconds(30))
        #expect(rig.receiver.powerState == .off)
        #expect(rig.bridge.statistics.fixes == 0 && rig.receiver.demandEvents.subscriberCount == 0)
        // A local watcher (as a gpsd client is) powers it; the bridge publishes what it produces.
        let local = rig.receiver.fixes.subscribe()
        try await rig.runUntilPositions(3)
        try await rig.waitUntilQuiet()

        let tpv = try jsonObject(try await payload(watcher, topics.tpv) { $0.contains("\"lat\"") })
        #expect(tpv["class"] as? String == "TPV" && tpv["mode"] as? Int == 3)
        #expect(tpv["device"] as? String == rig.receiver.devicePath)
        #expect(tpv["lat"] is Double && tpv["lon"] is Double && tpv["time"] is String)
        let sky = try jsonObject(try await payload(watcher, topics.sky))
        #expect(sky["class"] as? String == "SKY" && (sky["satellites"] as? [Any])?.isEmpty == false)
        let power = try jsonObject(try await payload(watcher, topics.power) { $0.contains("\"on\"") })
        #expect(power["state"] as? String == "on" && power["powered"] as? Bool == true)

        // OwnTracks: every field its Recorder and Home Assistant's integration read, with their types.
        let location = try jsonObject(try await payload(watcher, topics.ownTracks))
        #expect(location["_type"] as? String == "location")
        #expect(location["lat"] is Double && location["lon"] is Double)
        for field in ["tst", "acc", "alt", "vac", "vel", "cog"] {
            #expect(location[field] is Int, "OwnTracks \(field) in \(location)")
        }
        #expect(location["tid"] as? String == "i1")

        // Home Assistant discovery: a device tracker and two sensors, one device, available with the status.
        var configs: [String: [String: Any]] = [:]
        for (component, object) in [("device_tracker", "location"), ("sensor", "satellites"), ("sensor", "power")] {
            let topic = topics.discovery(component: component, object: object)
            configs[object] = try jsonObject(try await payload(watcher, topic))
        }
        for (object, config) in configs {
            #expect(config["unique_id"] as? String == "gnss-hat-pi1-\(object)")
            #expect(config["name"] is String)
            #expect(config["availability_topic"] as? String == topics.status)
            #expect(config["payload_available"] as? String == "online")
            #expect(config["payload_not_available"] as? String == "offline")
            let device = try #require(config["device"] as? [String: Any])
            #expect(device["identifiers"] as? [String] == ["gnss-hat-pi1"] && device["name"] as? String == "pi1")
        }
        #expect(configs["location"]?["json_attributes_topic"] as? String == topics.ownTracks)
        #expect(configs["location"]?["source_type"] as? String == "gps")
        #expect((configs["location"]?["json_attributes_template"] as? String)?.contains("gps_accuracy") == true)
        #expect(configs["satellites"]?["state_topic"] as? String == topics.sky)
        // The sensors' templates read fields the payloads on their state topics have.
        #expect(configs["satellites"]?["value_template"] as? String == "{{ value_json.uSat | default(0) }}")
        #expect(sky["uSat"] is Int, "SKY without uSat: \(sky)")
        #expect(configs["power"]?["state_topic"] as? String == topics.power)
        #expect(configs["power"]?["value_template"] as? String == "{{ value_json.state }}")
        #expect(configs["power"]?["device_class"] as? String == "enum")
        #expect(configs["power"]?["options"] as? [String] == PowerPayload.stateNames)

        local.cancel()
        try await rig.runUntil { $0 == .off }
        await rig.shutdown()
        // A clean stop says offline itself (no will) and leaves the last power state retained.
        #expect(try broker.subscribeOnce(topics.status) == ["offline"])
        #expect(try broker.subscribeOnce(topics.power) == [#"{"state":"off","powered":false,"reason":"linger ended"}"#])
        watcher.stop()
    }

    @Test func aConsumersRetainedDemandPowersTheReceiverAndItsWillPowersItOffAfterTheLinger() async throws {
        let broker = try TestBroker()
        let rig = try BridgeRig(broker: broker, linger: .seconds(5))
        try rig.bridge.start()
        try await rig.wait("a connection") { $0.connected }
        let consumer = try Daemon("paho consumer", executable: debianPython(),
                                  ["-u", "-c", Paho.consumer, "\(broker.port)", consumerUser, consumerPassword,
                                   rig.topics.demandPrefix + "phone", #"{"interval":600}"#])
        try await consumer.line(containing: "announced")
        try await rig.wait("the consumer") { $0.consumers == ["phone": ConsumerDemand(interval: 600)] }
        #expect(rig.receiver.demandEvents.subscriberCount == 1)
        try await rig.runUntil { $0 == .on }
        try await rig.runUntilPositions(1)
        // {"interval":600} is the consumer's FixDemand: the receiver sleeps between fixes.
        let plan = rig.receiver.powerPlan.plan
        #expect({ if case .dutyCycle(.seconds(600), _, _) = plan { true } else { false } }(), "plan \(plan)")

        // SIGKILL: no DISCONNECT, so the broker publishes the consumer's will (an empty retained demand).
        consumer.stop(signal: SIGKILL)
        try await rig.wait("the consumer gone") { $0.consumers.isEmpty }
        #expect(rig.receiver.demandEvents.subscriberCount == 0)
        #expect(rig.receiver.powerState == .lingering)
        await rig.driver.advance(by: .seconds(4))
        #expect(rig.receiver.powerState == .lingering, "off before the linger")
        try await rig.runUntil { $0 == .off }
        #expect(rig.bridge.statistics.claims == 0)
        await rig.shutdown()
    }

    @Test func aHundredConsumersJoiningAndLeavingAtRandomKeepThePowerExactAndLeakNothing() async throws {
        let broker = try TestBroker()
        let rig = try BridgeRig(broker: broker, linger: .seconds(1))
        try rig.bridge.start()
        try await rig.wait("a connection") { $0.connected }
        let crowd = try Daemon("paho crowd", executable: debianPython(),
                               ["-u", "-c", Paho.crowd, "\(broker.port)", consumerUser, consumerPassword,
                                rig.topics.demandPrefix, "17", "12", "40"], withInput: true)
        for round in (0..<12).map(String.init) + ["final"] {
            let line = try await crowd.line(containing: "round \(round) present:")
            let names = Set(line.split(separator: ":", maxSplits: 1)[1].split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty })
            try await rig.wait("the \(names.count) consumers of round \(round)") { Set($0.consumers.keys) == names }
            // One claim per consumer, one subscription of the receiver per claim, nothing else.
            #expect(rig.bridge.statistics.claims == names.count, "round \(round)")
            #expect(rig.receiver.demandEvents.subscriberCount == names.count, "round \(round)")
            if names.isEmpty {
                try await rig.runUntil { $0 == .off }
            } else {
                try await rig.runUntil { $0 == .on }
            }
            try crowd.send("next")
        }
        #expect(rig.bridge.statistics.consumers.isEmpty && rig.bridge.statistics.claims == 0)
        #expect(rig.receiver.demandEvents.subscriberCount == 0 && rig.receiver.events.subscriberCount == 0)
        #expect(rig.receiver.powerState == .off)
        // No retained demand is left on the broker either.
        let left = try CommandRun.run(
            executable: TestPaths.tool("/usr/bin/mosquitto_sub", package: "mosquitto-clients"),
            ["-h", "127.0.0.1", "-p", "\(broker.port)", "-u", brokerUser, "-P", brokerPassword,
             "-t", rig.topics.demandFilter, "--retained-only", "-W", "1"])
        #expect(left.out.isEmpty, "\(left.out)")
        await rig.shutdown()
        crowd.stop()
    }

    @Test func theBrokerKilledFor20SecondsMidStreamLosesNoFixAndKeepsTheirOrder() async throws {
        let broker = try TestBroker(persistent: true)
        let rig = try BridgeRig(broker: broker)
        let topics = rig.topics
        // A recorder with a persistent session: the broker keeps for it what comes while it is away.
        let recorder = try Daemon("paho recorder", executable: debianPython(),
                                  ["-u", "-c", Paho.recorder, "\(broker.port)", brokerUser, brokerPassword,
                                   "recorder", topics.tpv])
        try await recorder.line(containing: "subscribed")
        try rig.bridge.start()
        try await rig.wait("a connection") { $0.connected }
        let local = rig.receiver.fixes.subscribe()
        try await rig.runUntilPositions(3)
        // Quiet before the kill: every fix so far acknowledged, and the last one at the recorder (what
        // the broker acknowledged and had not delivered when killed would be the broker's loss).
        try await rig.waitUntilQuiet()
        let before = rig.producedFixes
        let timedBefore = rig.producedTimedFixes
        try await recorder.lines("the \(before) fixes before the kill") {
            $0.filter { $0.hasPrefix(topics.tpv + " ") }.count >= before
        }

        broker.stop(signal: SIGKILL)
        try await rig.wait("the lost connection") { !$0.connected }
        // 20 s of fixes while the broker is dead: simulated time, so the outage takes moments.
        await rig.driver.advance(by: .seconds(20))
        let total = rig.producedFixes
        let during = total - before
        #expect(during >= 19, "fixes during the outage: \(during)")
        // Every fix of the outage has a time, so the order check below covers each of them (a TPV
        // without one can come only before the first fix, when a cold start begins mid-epoch).
        let timedTotal = rig.producedTimedFixes
        #expect(timedTotal - timedBefore == during)
        try await rig.wait("the outage's fixes in the journal") { $0.fixes == total }
        #expect(rig.bridge.statistics.journalPending >= during, "\(rig.bridge.statistics)")
        try broker.start()
        try await rig.wait("the reconnect") { $0.connected }
        try await rig.waitUntilQuiet()
        try await recorder.lines("every fix at the recorder") { lines in
            ((try? timedTPVs(lines, topic: topics.tpv)).map { Set($0.map(\.time)).count } ?? 0) >= timedTotal
        }
        // Every fix, in order. QoS 1 allows repeats: the broker's own (`dup`, a delivery it restored from
        // its store after the kill) and ours (a message sent again after a reconnect, next to itself).
        let delivered = try deliveredOnce(recorder.output, topic: topics.tpv)
        #expect(delivered.everyTime.count == timedTotal)
        #expect(delivered.times.count == timedTotal)
        #expect(delivered.times == delivered.times.sorted(), "out of order: \(delivered.times)")
        #expect(rig.log.notices.contains { $0.contains("sending") && $0.contains("journaled messages") })
        local.cancel()
        await rig.shutdown()
        recorder.stop()
    }

    @Test func theJournalSurvivesARestartAndIsSentOnceTheBrokerIsBack() async throws {
        let broker = try TestBroker(start: false)
        let state = try TestPaths.temporaryDirectory()
        let first = try BridgeRig(broker: broker, stateDirectory: state)
        try first.bridge.start()
        try await first.log.line(containing: "cannot reach")
        let local = first.receiver.fixes.subscribe()
        try await first.runUntilPositions(5)
        local.cancel()
        try await first.runUntil { $0 == .off }
        let produced = first.producedFixes
        try await first.wait("every fix journaled") { $0.fixes == produced }
        await first.bridge.stop()
        let kept = first.bridge.statistics.journalPending
        #expect(kept >= 10, "\(first.bridge.statistics)")
        let receiver = first.receiver
        _ = try? await first.driver.run { await receiver.shutdown() }
        await first.hat.shutdown()
        // What the first bridge left, as a second process would open it (and close it again).
        let pending = try journalPending(in: state)
        #expect(pending.count == kept)

        try broker.start()
        let watcher = try await watch(broker, ["gnss-hat/pi1/tpv", "owntracks/gnss-hat/pi1"])
        let second = try BridgeRig(broker: broker, stateDirectory: state)
        try second.bridge.start()
        try await second.wait("the journal sent") { $0.connected && $0.journalPending == 0 && $0.acknowledged >= kept }
        let filters = ["gnss-hat/pi1/tpv", "owntracks/gnss-hat/pi1"]
        try await watcher.lines("the \(kept) journaled messages") { lines in
            lines.filter { line in filters.contains { line.hasPrefix($0 + " ") } }.count >= kept
        }
        let received = messages(watcher, on: filters)
        let expected = pending.map { $0.message.topic + " " + String(decoding: $0.message.payload, as: UTF8.self) }
        #expect(received == expected)
        // The second bridge powered nothing: the journal was all it sent.
        #expect(second.receiver.powerState == .off && second.bridge.statistics.fixes == 0)
        await second.shutdown()
        #expect(try journalPending(in: state).isEmpty)
        try? FileManager.default.removeItem(at: state)
        watcher.stop()
    }

    @Test func aConsumersIntervalSleepsTheReceiverAndThePowerTopicSaysOffBetweenItsFixes() async throws {
        let broker = try TestBroker()
        let rig = try BridgeRig(broker: broker)
        let power = rig.topics.power
        let watcher = try await watch(broker, [power])
        try rig.bridge.start()
        try await rig.wait("a connection") { $0.connected }
        try runTool("/usr/bin/mosquitto_pub", package: "mosquitto-clients",
                    ["-h", "127.0.0.1", "-p", "\(broker.port)", "-u", consumerUser, "-P", consumerPassword, "-q", "1",
                     "-r", "-t", rig.topics.demandPrefix + "phone", "-m", #"{"interval":600}"#])
        try await rig.wait("the consumer") { $0.consumers == ["phone": ConsumerDemand(interval: 600)] }
        // Three fixes of the duty cycle, due at 0, 600 and 1200 s, and off after each.
        let changes = rig.receiver.hardwarePowerChanges()
        let seen = Lock<[String]>([])
        defer { print("a consumer's interval of 600 s: the hardware's power \(seen.withLock { $0 })") }
        _ = try await rig.driver.run(limit: .seconds(1500)) {
            var sleeps = 0
            for await change in changes {
                seen.withLock { $0.append("\(change)") }
                if change.reason == .dutyCycleSleep && !change.power.isPowered { sleeps += 1 }
                if sleeps == 3 { return }
            }
        }
        // The consumer is served all along; the hardware is off, and the topic says so.
        #expect(rig.receiver.powerState == .on && rig.receiver.hardwarePower.power == .off)
        let sleep = #"{"state":"off","powered":false,"reason":"duty cycle sleep"}"#
        let lines = try await watcher.lines("three sleeps on \(power)") { lines in
            lines.filter { $0 == power + " " + sleep }.count == 3
        }
        let payloads = messages(watcher, on: [power]).map { String($0.dropFirst(power.count + 1)) }
        let initial = #"{"state":"off","powered":false,"reason":"initial"}"#
        let cycle: [String] = [
            #"{"state":"powering on","powered":true,"reason":"duty cycle wake"}"#,
            #"{"state":"on","powered":true,"reason":"duty cycle wake"}"#,
            #"{"state":"powering off","powered":true,"reason":"duty cycle sleep"}"#,
            sleep,
        ]
        let expected: [String] = [initial] + cycle + cycle + cycle
        #expect(payloads == expected, "\(lines)")
        await rig.shutdown()
    }

    @Test func theStandingDemandPowersTheReceiverForOneFixEveryInterval() async throws {
        let broker = try TestBroker()
        let rig = try BridgeRig(broker: broker, every: .seconds(120), linger: .seconds(1))
        try rig.bridge.start()
        try await rig.wait("the standing claim") { $0.standingClaim }
        try await rig.runUntil { $0 == .on }
        try await rig.runUntilBridge { $0.fixes > 0 && !$0.standingClaim }
        try await rig.runUntil { $0 == .off }
        let fixesOfTheFirst = rig.bridge.statistics.fixes
        // Off until the next is due, two minutes after the first claim began. The standing timer sleeps
        // on the receiver's clock from a task of the bridge's own, and its firing reaches the receiver
        // through the bridge's task: time moves to its deadline only once it is armed, and no further
        // until the bridge has claimed (the driver knows nothing of the bridge's work in progress).
        let offAt = rig.clock.now
        let clock = rig.clock
        let armed = await withDeadline(.seconds(20)) { await clock.waitForSleepers(1) }
        try #require(armed, "the standing timer never slept on the receiver's clock")
        let due = try #require(clock.nextDeadline).offset
        #expect(due >= .seconds(120) && due <= .seconds(121), "the next claim is due at \(due), off at \(offAt)")
        await rig.driver.advance(by: offAt.duration(to: ManualClock.Instant(offset: due)))
        try await rig.wait("the second standing claim") { $0.standingClaim }
        #expect(rig.clock.now.offset == due)
        try await rig.runUntil { $0 == .on }
        try await rig.runUntilBridge { $0.fixes > fixesOfTheFirst && !$0.standingClaim }
        try await rig.runUntil { $0 == .off }
        await rig.shutdown()
    }
}
