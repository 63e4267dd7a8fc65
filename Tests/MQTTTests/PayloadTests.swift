import Foundation
import GNSSHat
import GNSSProtocol
import GPSDProtocol
import Testing

@testable import MQTT

/// The payloads, read back with Foundation's JSON parser (a reader this module does not share).
@Suite struct PayloadTests {
    let topics: MQTTTopics

    init() throws {
        topics = MQTTTopics(device: try DeviceName("pi1"), ownTracksUser: "fleet")
    }

    func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    var fix: Fix {
        var fix = Fix()
        fix.time = GNSSTime(date: GNSSDate(year: 2024, month: 5, day: 6), time: TimeOfDay(hour: 7, minute: 8, second: 9,
                                                                                         nanosecond: 900_000_000))
        fix.mode = .threeD
        fix.latitude = 51.4778
        fix.longitude = -0.0014
        fix.altitudeMSL = 46.6
        fix.altitudeHAE = 92.1
        fix.eph = 3.4
        fix.epv = 5.6
        fix.speed = 12.5
        fix.track = 359.7
        return fix
    }

    @Test func ownTracksLocationHasEveryFieldWithOwnTracksTypes() throws {
        let json = try object(try #require(OwnTracksPayload.location(fix, trackerID: "i1")))
        #expect(json["_type"] as? String == "location")
        #expect(json["lat"] as? Double == 51.4778)
        #expect(json["lon"] as? Double == -0.0014)
        #expect(json["tst"] as? Int == 1_714_979_289)
        #expect(json["acc"] as? Int == 3)
        #expect(json["alt"] as? Int == 47)
        #expect(json["vac"] as? Int == 6)
        #expect(json["vel"] as? Int == 45)
        #expect(json["cog"] as? Int == 0)
        #expect(json["tid"] as? String == "i1")
        // Integers are written as integers (OwnTracks' apps and Recorder parse them as such).
        let text = String(decoding: try #require(OwnTracksPayload.location(fix, trackerID: "i1")), as: UTF8.self)
        #expect(text.contains(#""acc":3,"#) && text.contains(#""tst":1714979289,"#))
    }

    @Test func ownTracksNeedsAPositionAndATime() {
        var noFix = fix
        noFix.mode = .noFix
        #expect(OwnTracksPayload.location(noFix, trackerID: "i1") == nil)
        var noTime = fix
        noTime.time = nil
        #expect(OwnTracksPayload.location(noTime, trackerID: "i1") == nil)
        #expect(OwnTracksPayload.trackerID(for: topics.device) == "i1")
    }

    @Test func aTwoDimensionalFixHasNoAltitude() throws {
        var flat = fix
        flat.mode = .twoD
        let json = try object(try #require(OwnTracksPayload.location(flat, trackerID: "i1")))
        #expect(json["alt"] == nil && json["vac"] == nil)
        #expect(json["lat"] != nil)
    }

    @Test(arguments: HardwarePower.allCases)
    func powerJSON(power: HardwarePower) throws {
        let json = try object(PowerPayload.json(HardwarePowerChange(power: power, reason: .dutyCycleSleep, at: .zero)))
        #expect(json["state"] as? String == power.description)
        #expect(json["powered"] as? Bool == power.isPowered)
        #expect(json["reason"] as? String == "duty cycle sleep")
        #expect(json["failure"] == nil)
        let failed = try object(PowerPayload.json(HardwarePowerChange(power: power, reason: .failure("no answer"),
                                                                      at: .seconds(3))))
        #expect(failed["reason"] as? String == "failure" && failed["failure"] as? String == "no answer")
    }

    @Test func powerJSONIsStableForClients() {
        let off = HardwarePowerChange(power: .off, reason: .dutyCycleSleep, at: .seconds(612))
        #expect(String(decoding: PowerPayload.json(off), as: UTF8.self)
                    == #"{"state":"off","powered":false,"reason":"duty cycle sleep"}"#)
        let saving = HardwarePowerChange(power: .powerSave, reason: .demand, at: .seconds(2))
        #expect(String(decoding: PowerPayload.json(saving), as: UTF8.self)
                    == #"{"state":"power save","powered":true,"reason":"demand"}"#)
    }

    @Test func gpsdPayloadsAreTheServiceJSONWithoutTheLineEnd() {
        #expect(GPSDPayload.tpv(fix, device: "/dev/ttyAMA0") + Array("\r\n".utf8)
                    == Array(GPSDReport.tpv(fix, device: "/dev/ttyAMA0").utf8))
        let sky = SkyView(satellites: [SatelliteInView(system: .gps, svid: 3, prn: 3, used: true)])
        #expect(GPSDPayload.sky(sky) + Array("\r\n".utf8) == Array(GPSDReport.sky(sky).utf8))
    }

    @Test func homeAssistantDiscoveryCarriesEveryRequiredField() throws {
        let configs = HomeAssistantDiscovery.configs(topics: topics, model: "Waveshare L76X", softwareVersion: "1.0")
        #expect(configs.map(\.topic) == [
            "homeassistant/device_tracker/gnss-hat-pi1/location/config",
            "homeassistant/sensor/gnss-hat-pi1/satellites/config",
            "homeassistant/sensor/gnss-hat-pi1/power/config",
            "homeassistant/sensor/gnss-hat-pi1/rtk/config",
        ])
        var uniqueIDs: Set<String> = []
        for config in configs {
            #expect(config.retain && config.qos == .atLeastOnce)
            let json = try object(config.payload)
            uniqueIDs.insert(try #require(json["unique_id"] as? String))
            #expect(json["availability_topic"] as? String == "gnss-hat/pi1/status")
            #expect(json["payload_available"] as? String == "online")
            #expect(json["payload_not_available"] as? String == "offline")
            let device = try #require(json["device"] as? [String: Any])
            #expect(device["identifiers"] as? [String] == ["gnss-hat-pi1"])
            #expect(device["name"] as? String == "pi1")
            #expect(device["model"] as? String == "Waveshare L76X")
        }
        #expect(uniqueIDs.count == 4)
        let rtk = try object(configs[3].payload)
        #expect(rtk["state_topic"] as? String == "gnss-hat/pi1/tpv" && rtk["device_class"] as? String == "enum")
        #expect(rtk["options"] as? [String] == ["none", "DGNSS", "RTK float", "RTK fixed"])
        #expect(rtk["value_template"] as? String == HomeAssistantDiscovery.rtkTemplate)
        let tracker = try object(configs[0].payload)
        #expect(tracker["json_attributes_topic"] as? String == "owntracks/fleet/pi1")
        #expect(tracker["source_type"] as? String == "gps")
        let template = try #require(tracker["json_attributes_template"] as? String)
        for name in ["latitude", "longitude", "gps_accuracy"] { #expect(template.contains("'\(name)'")) }
        let satellites = try object(configs[1].payload)
        #expect(satellites["state_topic"] as? String == "gnss-hat/pi1/sky")
        #expect((satellites["value_template"] as? String)?.contains("uSat") == true)
        let power = try object(configs[2].payload)
        #expect(power["state_topic"] as? String == "gnss-hat/pi1/power")
        #expect(power["device_class"] as? String == "enum")
        #expect(power["options"] as? [String]
                    == ["off", "standby", "backup", "powering on", "on", "power save", "powering off"])
    }

    @Test func nodeIDsHaveOnlyCharactersDiscoveryAllows() throws {
        #expect(HomeAssistantDiscovery.nodeID(try DeviceName("boat.harbour")) == "gnss-hat-boat_harbour")
    }

    @Test func topicNames() {
        #expect(topics.status == "gnss-hat/pi1/status")
        #expect(topics.power == "gnss-hat/pi1/power")
        #expect(topics.tpv == "gnss-hat/pi1/tpv")
        #expect(topics.sky == "gnss-hat/pi1/sky")
        #expect(topics.demandFilter == "gnss-hat/pi1/demand/+")
        #expect(topics.ownTracks == "owntracks/fleet/pi1")
        #expect(topics.consumer(inDemandTopic: "gnss-hat/pi1/demand/me") == "me")
        #expect(topics.consumer(inDemandTopic: "gnss-hat/pi2/demand/me") == nil)
        #expect(topics.consumer(inDemandTopic: "gnss-hat/pi1/demand/me/deeper") == nil)
        #expect(topics.consumer(inDemandTopic: "gnss-hat/pi1/demand/") == nil)
    }

    @Test func aLevelSeparatorFollowedByACombiningMarkIsStillOne() {
        // "/\u{0615}" is one Character; MQTT splits at the byte (found by the MQTT demand fuzz target).
        #expect(topics.consumer(inDemandTopic: "gnss-hat/pi1/demand/me/\u{0615}x") == nil)
        #expect(topics.consumer(inDemandTopic: "gnss-hat/pi1/demand/\u{0615}me") == "\u{0615}me")
    }

    @Test func stringsAreEscaped() throws {
        let reason = "a \"quote\", a \\ and a\nline"
        let json = try object(PowerPayload.json(HardwarePowerChange(power: .off, reason: .failure(reason), at: .zero)))
        #expect(json["failure"] as? String == reason)
    }
}
