import Testing

@testable import MQTT

/// The presence machine driven with no threads and no broker.
@Suite struct PresenceTests {
    let topics: MQTTTopics

    init() throws {
        topics = MQTTTopics(device: try DeviceName("pi1"))
    }

    func demand(_ consumer: String) -> String { "gnss-hat/pi1/demand/" + consumer }

    @Test func aConsumerArrivesChangesItsDemandAndLeaves() {
        var presence = PresenceMachine(topics: topics)
        #expect(presence.received(topic: demand("me"), payload: Array("{}".utf8))
                    == [.begin(consumer: "me", demand: ConsumerDemand())])
        #expect(presence.received(topic: demand("me"), payload: Array("{}".utf8)) == [])
        #expect(presence.received(topic: demand("me"), payload: Array(#" {"interval" : 600} "#.utf8))
                    == [.update(consumer: "me", demand: ConsumerDemand(interval: 600))])
        #expect(presence.received(topic: demand("me"), payload: []) == [.end(consumer: "me")])
        #expect(presence.received(topic: demand("me"), payload: []) == [])
        #expect(presence.consumers.isEmpty)
    }

    @Test(arguments: [
        "not json", "[]", "{", #"{"interval":0}"#, #"{"interval":-5}"#, #"{"interval":1.5}"#,
        #"{"interval":"600"}"#, #"{"interval":86401}"#, #"{"interval":600} trailing"#, #"{"interval":6e2}"#,
        #"{"interval":[600]}"#, #"{"interval":600"#, #"{"accuracy":0}"#, #"{"accuracy":"0.02"}"#,
        #"{"accuracy":-1}"#,
    ])
    func aMalformedDemandIsRejectedAndChangesNothing(payload: String) {
        var presence = PresenceMachine(topics: topics)
        _ = presence.received(topic: demand("me"), payload: Array(#"{"interval":60}"#.utf8))
        let actions = presence.received(topic: demand("me"), payload: Array(payload.utf8))
        guard case let .rejected(consumer, topic, _)? = actions.first, actions.count == 1 else {
            Issue.record("\(payload): \(actions)")
            return
        }
        #expect(consumer == "me")
        #expect(topic == demand("me"))
        #expect(presence.consumers == ["me": ConsumerDemand(interval: 60)])
    }

    @Test func unknownMembersAndNestedValuesAreIgnored() throws {
        let payload = #"{"name":"phone \"A\"","tags":["x",{"y":[1,2e3]}],"interval":30,"on":true,"n":null}"#
        #expect(try ConsumerDemand(payload: Array(payload.utf8)) == ConsumerDemand(interval: 30))
    }

    @Test func anAccuracyIsPartOfTheDemand() throws {
        let demand = try ConsumerDemand(payload: Array(#"{"interval":60,"accuracy":0.02}"#.utf8))
        #expect(demand == ConsumerDemand(interval: 60, accuracy: 0.02))
        #expect(try ConsumerDemand(payload: Array(#"{"accuracy":5}"#.utf8)) == ConsumerDemand(accuracy: 5))
    }

    @Test func aTopicOutsideTheDemandLevelIsRejected() {
        var presence = PresenceMachine(topics: topics)
        let actions = presence.received(topic: "gnss-hat/pi1/demand/a/b", payload: Array("{}".utf8))
        guard case .rejected(_, "gnss-hat/pi1/demand/a/b", .badConsumerName)? = actions.first else {
            Issue.record("\(actions)")
            return
        }
        #expect(presence.consumers.isEmpty)
    }

    @Test func consumersStayWhileTheBrokerIsAwayAndTheSweepEndsThoseNotHeardFromAfter() {
        var presence = PresenceMachine(topics: topics, sweepDelay: .seconds(2))
        _ = presence.received(topic: demand("a"), payload: Array("{}".utf8))
        _ = presence.received(topic: demand("b"), payload: Array("{}".utf8))
        _ = presence.received(topic: demand("c"), payload: Array("{}".utf8))
        #expect(presence.connectionLost() == [])
        #expect(presence.consumers.count == 3)
        let armed = presence.subscribed()
        #expect(armed == [.armSweep(generation: 2, delay: .seconds(2))])
        // The retained messages after the resubscription: a is back, c changed, b never comes.
        #expect(presence.received(topic: demand("a"), payload: Array("{}".utf8)) == [])
        #expect(presence.received(topic: demand("c"), payload: Array(#"{"interval":5}"#.utf8))
                    == [.update(consumer: "c", demand: ConsumerDemand(interval: 5))])
        #expect(presence.sweepDue(generation: 1) == [])
        #expect(presence.sweepDue(generation: 2) == [.end(consumer: "b")])
        #expect(presence.sweepDue(generation: 2) == [])
        #expect(presence.consumers.keys.sorted() == ["a", "c"])
    }

    @Test func aLossBeforeTheSweepMakesItStale() {
        var presence = PresenceMachine(topics: topics)
        _ = presence.received(topic: demand("a"), payload: Array("{}".utf8))
        _ = presence.connectionLost()
        _ = presence.subscribed()
        _ = presence.connectionLost()
        #expect(presence.sweepDue(generation: 2) == [])
        #expect(presence.subscribed() == [.armSweep(generation: 4, delay: .seconds(2))])
        #expect(presence.sweepDue(generation: 4) == [.end(consumer: "a")])
    }

    @Test func theFirstSubscriptionArmsNoSweep() {
        var presence = PresenceMachine(topics: topics)
        #expect(presence.subscribed() == [])
    }

    @Test func endAllEndsEveryoneInOrder() {
        var presence = PresenceMachine(topics: topics)
        for name in ["b", "a"] { _ = presence.received(topic: demand(name), payload: Array("{}".utf8)) }
        #expect(presence.endAll() == [.end(consumer: "a"), .end(consumer: "b")])
    }
}
