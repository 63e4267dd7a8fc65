/// The topics of one device, exactly as the README's fleet section lists them.
public struct MQTTTopics: Sendable, Hashable {
    public let device: DeviceName
    /// OwnTracks' user level (`owntracks/USER/DEVICE`).
    public let ownTracksUser: String

    public init(device: DeviceName, ownTracksUser: String = "gnss-hat") {
        self.device = device
        self.ownTracksUser = ownTracksUser
    }

    /// Checks an OwnTracks user name: one topic level (no `/`, `+`, `#` or control characters, at
    /// most 64 bytes), as `owntracks/USER/DEVICE` needs.
    public static func validateOwnTracksUser(_ user: String) throws(MQTTConfigurationError) {
        guard !user.isEmpty else { throw .badOwnTracksUser(user, reason: "it is empty") }
        guard user.utf8.count <= 64 else { throw .badOwnTracksUser(user, reason: "it is longer than 64 bytes") }
        guard !user.unicodeScalars.contains(where: { $0 == "/" || $0 == "+" || $0 == "#" || $0.value < 0x20 }) else {
            throw .badOwnTracksUser(user, reason: "'/', '+', '#' and control characters cannot be in a topic level")
        }
    }

    var base: String { "gnss-hat/\(device.rawValue)" }

    /// Retained `online`; the will sets it to `offline`.
    public var status: String { base + "/status" }
    /// Retained power JSON (``PowerPayload``).
    public var power: String { base + "/power" }
    /// gpsd's TPV JSON of every fix.
    public var tpv: String { base + "/tpv" }
    /// gpsd's SKY JSON of every sky view.
    public var sky: String { base + "/sky" }
    /// Where consumers announce themselves: `gnss-hat/DEVICE/demand/CONSUMER`.
    public var demandPrefix: String { base + "/demand/" }
    /// The subscription that sees every consumer.
    public var demandFilter: String { base + "/demand/+" }
    /// OwnTracks location JSON (``OwnTracksPayload``).
    public var ownTracks: String { "owntracks/\(ownTracksUser)/\(device.rawValue)" }

    /// Home Assistant's discovery topic of one entity (`homeassistant/COMPONENT/NODE/OBJECT/config`).
    public func discovery(component: String, object: String) -> String {
        "homeassistant/\(component)/\(HomeAssistantDiscovery.nodeID(device))/\(object)/config"
    }

    /// The consumer a demand topic names, or nil for a topic outside this device's demand level
    /// (or one with a deeper level, which `+` never delivers).
    public func consumer(inDemandTopic topic: String) -> String? {
        // MQTT's levels are split at the byte '/': compared as Characters, a '/' followed by a combining
        // mark is one Character and no separator, and a deeper level passed for a consumer name.
        let bytes = topic.utf8
        guard bytes.starts(with: demandPrefix.utf8) else { return nil }
        let name = bytes.dropFirst(demandPrefix.utf8.count)
        guard !name.isEmpty, !name.contains(UInt8(ascii: "/")) else { return nil }
        return String(decoding: name, as: UTF8.self)
    }
}
