// Remote presence: every consumer that announces itself on `gnss-hat/DEVICE/demand/CONSUMER` with a
// retained message is one subscription of the receiver, until an empty message (its own, or its
// will when its connection dies) clears it.
internal import GPSDProtocol

/// What a present consumer asks for.
public struct ConsumerDemand: Sendable, Hashable {
    /// A fix every `interval` seconds is enough (`{"interval":600}`); nil: as often as they come (`{}`).
    public var interval: Int?
    /// Fixes this accurate, metres (`{"accuracy":0.02}`); at or below the board's RTK threshold the receiver
    /// takes corrections while the consumer is present (`serve --ntrip`). nil: none asked.
    public var accuracy: Double?

    public init(interval: Int? = nil, accuracy: Double? = nil) {
        self.interval = interval
        self.accuracy = accuracy
    }

    /// The longest interval a consumer may ask for: a day.
    public static let maximumInterval = 86_400

    /// Reads a demand payload: a JSON object whose optional `interval` is a whole number of seconds
    /// from 1 to a day. Other members are skipped, as gpsd's reader skips attributes it does not
    /// know (later versions may add some); it is GPSDProtocol's request reader, so its limits hold too (an
    /// attribute name of at most 31 characters, a value of at most 512).
    public init(payload: [UInt8]) throws(PresenceError) {
        let attributes: [(name: String, value: RequestValue)]
        do {
            let object = try RequestObjectReader.read(payload[...])
            guard payload[object.end...].allSatisfy(RequestObjectReader.isSpace) else {
                throw PresenceError.notAnObject("text after the object")
            }
            attributes = object.attributes
        } catch let error as PresenceError {
            throw error
        } catch {
            throw .notAnObject("\(error)")
        }
        var interval: Int?
        for attribute in attributes where attribute.name == "interval" {
            guard case let .token(text) = attribute.value, text.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let seconds = Int(text), (1...Self.maximumInterval).contains(seconds)
            else {
                throw .badInterval(Self.describe(attribute.value))
            }
            interval = seconds
        }
        var accuracy: Double?
        for attribute in attributes where attribute.name == "accuracy" {
            guard case let .token(text) = attribute.value, let metres = Double(text), metres.isFinite,
                  metres >= 0.001, metres <= 100_000
            else {
                throw .badAccuracy(Self.describe(attribute.value))
            }
            accuracy = metres
        }
        self.interval = interval
        self.accuracy = accuracy
    }

    private static func describe(_ value: RequestValue) -> String {
        switch value {
        case let .string(text): "\"\(text)\""
        case let .token(text): text
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Why a demand message was not understood.
public enum PresenceError: Error, Hashable, Sendable, CustomStringConvertible {
    case notAnObject(String)
    case badInterval(String)
    case badAccuracy(String)
    case badConsumerName(String)

    public var description: String {
        switch self {
        case let .notAnObject(reason): "the payload is not a JSON object (\(reason))"
        case let .badInterval(value):
            "\"interval\" is \(value), not a whole number of seconds from 1 to \(ConsumerDemand.maximumInterval)"
        case let .badAccuracy(value): "\"accuracy\" is \(value), not a number of metres from 0.001 to 100000"
        case let .badConsumerName(name): "'\(name)' is not a consumer name"
        }
    }
}

/// Consumers' presence as a plain value: demand messages go in, what to do with the receiver's
/// subscriptions comes out, in order. No clock and no threads; the one timer (the sweep after a
/// reconnect) is an action with a generation, so a stale one does nothing.
///
/// While the broker is away every consumer stays as it was (nobody can say it left). After a
/// reconnect the broker sends every retained demand again; a consumer that left meanwhile sends
/// nothing, so the sweep, armed when the subscription is acknowledged, ends each consumer not heard
/// from since the reconnect.
public struct PresenceMachine: Sendable {
    public enum Action: Equatable, Sendable {
        /// A consumer arrived: begin one subscription for it.
        case begin(consumer: String, demand: ConsumerDemand)
        /// A present consumer changed its demand.
        case update(consumer: String, demand: ConsumerDemand)
        /// A consumer left: end its subscription.
        case end(consumer: String)
        /// A demand message not understood; the consumer's state is left as it was.
        case rejected(consumer: String, topic: String, PresenceError)
        /// Call ``sweepDue(generation:)`` after `delay`.
        case armSweep(generation: UInt64, delay: Duration)
    }

    public let topics: MQTTTopics
    /// How long after the demand subscription is acknowledged the retained messages have all come.
    public let sweepDelay: Duration
    public private(set) var consumers: [String: ConsumerDemand] = [:]
    /// Consumers not heard from since the last reconnect (ended by the sweep).
    public private(set) var unconfirmed: Set<String> = []
    private var sweepGeneration: UInt64 = 0
    private var sweepArmed = false

    public init(topics: MQTTTopics, sweepDelay: Duration = .seconds(2)) {
        self.topics = topics
        self.sweepDelay = sweepDelay
    }

    /// A message on the demand topic (retained or live).
    public mutating func received(topic: String, payload: [UInt8]) -> [Action] {
        guard let consumer = topics.consumer(inDemandTopic: topic) else {
            return [.rejected(consumer: "", topic: topic, .badConsumerName(String(topic.dropFirst(topics.demandPrefix.count))))]
        }
        unconfirmed.remove(consumer)
        guard !payload.isEmpty else {
            return consumers.removeValue(forKey: consumer) == nil ? [] : [.end(consumer: consumer)]
        }
        let demand: ConsumerDemand
        do {
            demand = try ConsumerDemand(payload: payload)
        } catch {
            return [.rejected(consumer: consumer, topic: topic, error)]
        }
        switch consumers.updateValue(demand, forKey: consumer) {
        case nil: return [.begin(consumer: consumer, demand: demand)]
        case demand?: return []
        case _?: return [.update(consumer: consumer, demand: demand)]
        }
    }

    /// The connection to the broker was lost: nobody is known to have left; all await confirmation.
    public mutating func connectionLost() -> [Action] {
        unconfirmed = Set(consumers.keys)
        sweepArmed = false
        sweepGeneration += 1
        return []
    }

    /// The broker acknowledged the demand subscription (after every connect): its retained messages
    /// follow, and the sweep after ``sweepDelay`` ends whoever was not among them.
    public mutating func subscribed() -> [Action] {
        sweepGeneration += 1
        guard !unconfirmed.isEmpty else {
            sweepArmed = false
            return []
        }
        sweepArmed = true
        return [.armSweep(generation: sweepGeneration, delay: sweepDelay)]
    }

    /// The sweep armed with `generation` is due.
    public mutating func sweepDue(generation: UInt64) -> [Action] {
        guard sweepArmed, generation == sweepGeneration else { return [] }
        sweepArmed = false
        let gone = unconfirmed.sorted()
        unconfirmed = []
        return gone.compactMap { consumers.removeValue(forKey: $0) == nil ? nil : .end(consumer: $0) }
    }

    /// Ends everyone (the bridge stops).
    public mutating func endAll() -> [Action] {
        let all = consumers.keys.sorted()
        consumers = [:]
        unconfirmed = []
        sweepArmed = false
        sweepGeneration += 1
        return all.map { .end(consumer: $0) }
    }
}
