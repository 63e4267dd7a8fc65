// libFuzzer entry point over what the MQTT bridge receives: a topic and a payload, through MQTTTopics
// and the PresenceMachine (ConsumerDemand's reader). Built only by scripts/fuzz.sh (GNSSHAT_FUZZ=1).
//
// The input is a topic, a NUL byte, then the payload (no NUL: the whole input is a payload on a demand
// topic of the fuzzer's device). Properties checked, beyond "no crash, no sanitizer report":
// - a topic outside `gnss-hat/DEVICE/demand/CONSUMER` (another device, another level, a deeper one, an
//   empty consumer) is ignored: one rejection, and the consumers stay as they were;
// - on a demand topic, an empty payload ends the consumer; any other payload is a valid demand (an
//   interval from 1 s to a day, or none) that begins or updates the consumer, or a typed rejection
//   that leaves it as it was;
// - a demand that parses, written as a demand payload (`{"interval":N}` or `{}`), parses to itself.

import MQTT

private let device = (try? DeviceName("hat-1")) ?? { fatalError("the fuzzer's device name is invalid") }()
private let topics = MQTTTopics(device: device)
private let present = ConsumerDemand(interval: 60)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    let topic: String
    let payload: [UInt8]
    if let nul = input.firstIndex(of: 0) {
        topic = String(decoding: input[..<nul], as: UTF8.self)
        payload = Array(input[(nul + 1)...])
    } else {
        topic = topics.demandPrefix + "phone"
        payload = Array(input)
    }
    // A consumer already present, so that a message that must change nothing has something to change.
    var machine = PresenceMachine(topics: topics)
    _ = machine.received(topic: topics.demandPrefix + "phone", payload: Array("{\"interval\":60}".utf8))
    _ = machine.received(topic: topics.demandPrefix + "laptop", payload: Array("{}".utf8))
    let before = machine.consumers
    guard before.count == 2 else { fatalError("the consumers set up did not arrive") }
    let actions = machine.received(topic: topic, payload: payload)

    guard let consumer = consumerName(topic) else {
        guard actions.count == 1, case .rejected(_, _, .badConsumerName) = actions[0], machine.consumers == before
        else { fatalError("a topic outside the device's demand level was not ignored") }
        return 0
    }
    if payload.isEmpty {
        let expected: [PresenceMachine.Action] = before[consumer] == nil ? [] : [.end(consumer: consumer)]
        guard actions == expected, machine.consumers[consumer] == nil else { fatalError("an empty demand kept it") }
        return 0
    }
    switch Result(catching: { () throws(PresenceError) in try ConsumerDemand(payload: payload) }) {
    case .success(let demand):
        if let interval = demand.interval, !(1...ConsumerDemand.maximumInterval).contains(interval) {
            fatalError("a demand's interval is out of range")
        }
        let expected: [PresenceMachine.Action] = switch before[consumer] {
        case nil: [.begin(consumer: consumer, demand: demand)]
        case demand?: []
        case _?: [.update(consumer: consumer, demand: demand)]
        }
        guard actions == expected, machine.consumers[consumer] == demand else {
            fatalError("a valid demand did not begin or update its consumer")
        }
        if let accuracy = demand.accuracy, !(0.001...100_000).contains(accuracy) {
            fatalError("a demand's accuracy is out of range")
        }
        let members = [demand.interval.map { "\"interval\":\($0)" }, demand.accuracy.map { "\"accuracy\":\($0)" }]
        let written = Array(("{" + members.compactMap { $0 }.joined(separator: ",") + "}").utf8)
        guard (try? ConsumerDemand(payload: written)) == demand else { fatalError("a demand does not round-trip") }
    case .failure(let error):
        guard actions == [.rejected(consumer: consumer, topic: topic, error)], machine.consumers == before else {
            fatalError("a rejected demand changed the consumers")
        }
    }
    return 0
}

/// The consumer a topic names, read from its bytes without MQTTTopics: `gnss-hat/hat-1/demand/` and one
/// non-empty level.
private func consumerName(_ topic: String) -> String? {
    let prefix = Array("gnss-hat/hat-1/demand/".utf8)
    let bytes = Array(topic.utf8)
    guard bytes.count > prefix.count, bytes.starts(with: prefix) else { return nil }
    let name = bytes[prefix.count...]
    guard !name.contains(UInt8(ascii: "/")) else { return nil }
    return String(decoding: name, as: UTF8.self)
}
