// The payloads the bridge publishes, each a pure function of a fix, a sky view or a power state:
// gpsd's TPV and SKY JSON (GPSDProtocol's encoder, as the service writes it), OwnTracks location JSON,
// Home Assistant's discovery configs, and the power JSON. Every object is written by GPSDProtocol's
// `JSONWriter`, the one JSON writer of the package.
public import GNSSHat
public import GNSSProtocol
internal import GPSDProtocol

/// gpsd's TPV and SKY objects as one MQTT payload each: GPSDProtocol's encoder, without the line end.
public enum GPSDPayload {
    public static func tpv(_ fix: Fix, device: String? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        GPSDReport.appendTPV(fix, device: device, to: &bytes, lineEnding: false)
        return bytes
    }

    public static func sky(_ sky: SkyView, device: String? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        GPSDReport.appendSKY(sky, device: device, to: &bytes, lineEnding: false)
        return bytes
    }
}

/// OwnTracks' location message (`_type` `location`), as OwnTracks Recorder stores it and Home
/// Assistant's OwnTracks integration reads it. Types as OwnTracks' JSON documentation gives them:
/// `lat`, `lon` numbers; `tst` (Unix seconds), `acc`, `alt`, `vac` (metres), `vel` (km/h) and `cog`
/// (degrees) integers; `tid` a two-character string.
public enum OwnTracksPayload {
    /// The location JSON of `fix`, or nil when it has no position or no time (OwnTracks requires
    /// `lat`, `lon` and `tst`). `acc` is gpsd's `eph` (95 % horizontal), `vac` its `epv`, `alt` the
    /// height above mean sea level (ellipsoidal when that is all there is).
    public static func location(_ fix: Fix, trackerID: String) -> [UInt8]? {
        guard fix.hasPosition, let latitude = fix.latitude, let longitude = fix.longitude, let time = fix.time else {
            return nil
        }
        var bytes: [UInt8] = []
        JSONWriter.append(to: &bytes, capacity: 256) { json in
            json.open()
            json.string("_type", "location")
            json.number("lat", latitude, 7)
            json.number("lon", longitude, 7)
            json.int("tst", Int(floorDivide(time.nanosecondsSinceEpoch, 1_000_000_000)))
            if let accuracy = integer(fix.eph ?? horizontalError(fix)) { json.int("acc", accuracy) }
            if fix.mode == .threeD, let altitude = integer(fix.altitudeMSL ?? fix.altitudeHAE) {
                json.int("alt", altitude)
            }
            if fix.mode == .threeD, let vertical = integer(fix.epv) { json.int("vac", vertical) }
            if let speed = fix.speed, let kmh = integer(speed * 3.6) { json.int("vel", kmh) }
            if let track = integer(fix.track) { json.int("cog", track % 360) }
            json.string("tid", trackerID)
            json.close()
        }
        return bytes
    }

    /// OwnTracks' tracker id for a device, as its apps make one: the last two characters of the name.
    public static func trackerID(for device: DeviceName) -> String {
        String(device.rawValue.suffix(2))
    }

    private static func horizontalError(_ fix: Fix) -> Double? {
        guard let x = fix.epx, let y = fix.epy else { return nil }
        return max(x, y)
    }

    private static func integer(_ value: Double?) -> Int? {
        guard let value, value.isFinite, abs(value) < 1e12 else { return nil }
        return Int(value.rounded())
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
    }
}

/// The retained power message, the hardware's power:
/// `{"state":"off"|"standby"|"backup"|"powering on"|"on"|"power save"|"powering off","powered":BOOL,"reason":...}`.
public enum PowerPayload {
    /// `state` as ``HardwarePower`` names it, `powered` (whether the receiver may draw its operating
    /// current), `reason` as ``HardwarePowerChange/Reason/name`` says it ("demand", "duty cycle
    /// sleep", ...), and `failure` with the text when the reason is a failure.
    public static func json(_ change: HardwarePowerChange) -> [UInt8] {
        let failure = change.reason.failure
        var bytes: [UInt8] = []
        JSONWriter.append(to: &bytes, capacity: 160 + (failure?.utf8.count ?? 0) * 6) { json in
            json.open()
            json.string("state", change.power.description)
            json.bool("powered", change.power.isPowered)
            json.string("reason", change.reason.name)
            if let failure { json.string("failure", failure) }
            json.close()
        }
        return bytes
    }

    /// Every state's name, for Home Assistant's enum sensor.
    public static let stateNames: [String] = HardwarePower.allCases.map(\.description)
}

/// Home Assistant MQTT discovery: retained configs under `homeassistant/` that make Home Assistant
/// show the hat as a device with a GPS tracker and two sensors, with no configuration.
public enum HomeAssistantDiscovery {
    /// Home Assistant's node id for a device: `gnss-hat-NAME` with every character outside
    /// `[A-Za-z0-9_-]` made `_` (discovery topics allow no others).
    public static func nodeID(_ device: DeviceName) -> String {
        let safe = device.rawValue.map { c -> Character in
            c.isASCII && (c.isLetter || c.isNumber || c == "_" || c == "-") ? c : "_"
        }
        return "gnss-hat-" + String(safe)
    }

    /// The four configs, retained:
    /// - `device_tracker` `location`: its attributes from the OwnTracks topic (published only with a
    ///   position), renamed to the `latitude`, `longitude` and `gps_accuracy` Home Assistant reads;
    /// - `sensor` `satellites`: satellites used, from the SKY topic's `uSat`;
    /// - `sensor` `power`: the hardware's power, an enum sensor over the power topic's `state`;
    /// - `sensor` `rtk`: the RTK solution, an enum sensor over the TPV topic's `status`.
    /// Each has a `unique_id`, the same `device`, and `availability` on the status topic.
    public static func configs(topics: MQTTTopics, model: String, softwareVersion: String? = nil) -> [OutgoingMessage] {
        let node = nodeID(topics.device)
        func common(_ json: inout JSONWriter, object: String, name: String) {
            json.open()
            json.string("name", name)
            json.string("unique_id", "\(node)-\(object)")
            json.string("object_id", "\(node)-\(object)")
            json.string("availability_topic", topics.status)
            json.string("payload_available", "online")
            json.string("payload_not_available", "offline")
            json.object("device") { device in
                device.strings("identifiers", [node])
                device.string("name", topics.device.rawValue)
                device.string("manufacturer", "GNSSHat")
                device.string("model", model)
                if let softwareVersion { device.string("sw_version", softwareVersion) }
            }
        }
        func config(_ body: (inout JSONWriter) -> Void) -> [UInt8] {
            var bytes: [UInt8] = []
            JSONWriter.append(to: &bytes, capacity: 1024) { json in
                body(&json)
                json.close()
            }
            return bytes
        }
        let tracker = config { json in
            common(&json, object: "location", name: "Location")
            json.string("source_type", "gps")
            json.string("json_attributes_topic", topics.ownTracks)
            json.string("json_attributes_template",
                        "{{ {'latitude': value_json.lat, 'longitude': value_json.lon, "
                            + "'gps_accuracy': value_json.acc | default(0)} | tojson }}")
        }
        let satellites = config { json in
            common(&json, object: "satellites", name: "Satellites used")
            json.string("state_topic", topics.sky)
            json.string("value_template", "{{ value_json.uSat | default(0) }}")
            json.string("state_class", "measurement")
            json.string("icon", "mdi:satellite-variant")
        }
        let power = config { json in
            common(&json, object: "power", name: "Receiver power")
            json.string("state_topic", topics.power)
            json.string("value_template", "{{ value_json.state }}")
            json.string("device_class", "enum")
            json.strings("options", PowerPayload.stateNames)
        }
        // RTK: gpsd's TPV status (2 DGPS, 3 RTK fixed, 4 RTK float) as an enum sensor.
        let rtk = config { json in
            common(&json, object: "rtk", name: "RTK")
            json.string("state_topic", topics.tpv)
            json.string("value_template", Self.rtkTemplate)
            json.string("device_class", "enum")
            json.strings("options", Self.rtkStates)
            json.string("icon", "mdi:crosshairs-gps")
        }
        return [
            OutgoingMessage(topic: topics.discovery(component: "device_tracker", object: "location"),
                            payload: tracker, qos: .atLeastOnce, retain: true),
            OutgoingMessage(topic: topics.discovery(component: "sensor", object: "satellites"),
                            payload: satellites, qos: .atLeastOnce, retain: true),
            OutgoingMessage(topic: topics.discovery(component: "sensor", object: "power"),
                            payload: power, qos: .atLeastOnce, retain: true),
            OutgoingMessage(topic: topics.discovery(component: "sensor", object: "rtk"),
                            payload: rtk, qos: .atLeastOnce, retain: true),
        ]
    }

    /// The RTK sensor's states.
    public static let rtkStates = ["none", "DGNSS", "RTK float", "RTK fixed"]

    /// The RTK sensor's template over a TPV: gpsd's `status` 2, 3 and 4 named, any other "none".
    public static let rtkTemplate = "{{ {2: 'DGNSS', 3: 'RTK fixed', 4: 'RTK float'}"
        + ".get(value_json.status | default(0) | int, 'none') }}"
}
