import Foundation
import LinuxSystem
import Testing
import TestSupport

@testable import MQTT

@Suite struct ConfigurationTests {
    @Test(arguments: [
        ("mqtt://broker", BrokerAddress(host: "broker", port: 1883)),
        ("mqtt://broker:1884/", BrokerAddress(host: "broker", port: 1884)),
        ("mqtts://me@broker.example.org", BrokerAddress(host: "broker.example.org", port: 8883, usesTLS: true,
                                                         username: "me")),
        ("mqtt://[::1]:1999", BrokerAddress(host: "::1", port: 1999)),
        ("mqtt://user.name@10.0.0.2:1", BrokerAddress(host: "10.0.0.2", port: 1, username: "user.name")),
    ])
    func parses(url: String, expected: BrokerAddress) throws {
        #expect(try BrokerAddress(url: url) == expected)
    }

    @Test(arguments: [
        ("http://broker", MQTTConfigurationError.badScheme(url: "http://broker")),
        ("mqtt://", .missingHost(url: "mqtt://")),
        ("mqtt://:1883", .missingHost(url: "mqtt://:1883")),
        ("mqtt://broker:0", .badPort(url: "mqtt://broker:0", port: "0")),
        ("mqtt://broker:65536", .badPort(url: "mqtt://broker:65536", port: "65536")),
        ("mqtt://broker:x", .badPort(url: "mqtt://broker:x", port: "x")),
        ("mqtt://me:secret@broker", .passwordInURL(url: "mqtt://me:secret@broker")),
        ("mqtt://broker/topic", .pathInURL(url: "mqtt://broker/topic")),
        ("mqtt://@broker", .badUser(url: "mqtt://@broker")),
        ("mqtt://bro ker", .badHost(url: "mqtt://bro ker", host: "bro ker")),
        ("mqtt://[::1", .badHost(url: "mqtt://[::1", host: "[::1")),
    ])
    func refuses(url: String, expected: MQTTConfigurationError) {
        #expect(throws: expected) { try BrokerAddress(url: url) }
        // One line, naming the URL, for the command line's exit 2.
        #expect(!expected.description.contains("\n"))
    }

    @Test func theDescriptionNeverHoldsASecret() throws {
        #expect(try BrokerAddress(url: "mqtts://me@[::1]").description == "mqtts://me@[::1]:8883")
    }

    @Test func deviceNames() throws {
        #expect(try DeviceName("pi-1_a.b").rawValue == "pi-1_a.b")
        for bad in ["", "a/b", "a+b", "a#", "ä", String(repeating: "x", count: 65)] {
            #expect(throws: MQTTConfigurationError.self) { try DeviceName(bad) }
        }
        let host = try DeviceName.hostName()
        #expect(!host.rawValue.isEmpty && !host.rawValue.contains("."))
    }

    @Test func thePasswordIsTheFileFirstLine() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("password").path
        try "s3cret\nignored\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try MQTTConfiguration.readPassword(from: file) == "s3cret")
        let empty = directory.appendingPathComponent("empty").path
        try "\n".write(toFile: empty, atomically: true, encoding: .utf8)
        #expect(throws: MQTTConfigurationError.emptyPasswordFile(path: empty)) {
            try MQTTConfiguration.readPassword(from: empty)
        }
        let missing = directory.appendingPathComponent("missing").path
        #expect(throws: MQTTConfigurationError.unreadableFile(role: "password file", path: missing,
                                                              .noSuchFileOrDirectory)) {
            try MQTTConfiguration.readPassword(from: missing)
        }
    }

    @Test func aPasswordNeedsAUser() throws {
        let configuration = MQTTConfiguration(broker: try BrokerAddress(url: "mqtt://broker"), password: "x",
                                              clientID: "c")
        #expect(throws: MQTTConfigurationError.passwordWithoutUser) { try configuration.validate() }
    }
}
