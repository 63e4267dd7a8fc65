// URLs, credentials, requests and the GGA: what the client writes, byte for byte.
import Foundation
import GNSSProtocol
import LinuxSystem
import Testing
import TestSupport

@testable import NTRIP

@Suite("NTRIP URLs, requests and GGA")
struct RequestTests {
    @Test("ntrip:// and ntrip+tls:// with their default ports; no password in a URL, nor in its description")
    func urls() throws {
        let plain = try CasterURL(parsing: "ntrip://me@rtk2go.com/MOUNT")
        #expect(plain == CasterURL(host: "rtk2go.com", port: 2101, user: "me", mountpoint: "MOUNT"))
        let tls = try CasterURL(parsing: "ntrip+tls://caster.example:8443/RTCM3_A/")
        #expect(tls == CasterURL(host: "caster.example", port: 8443, mountpoint: "RTCM3_A", usesTLS: true))
        #expect(try CasterURL(parsing: "NTRIP+TLS://caster.example").port == 443)
        #expect(try CasterURL(parsing: "ntrip://[::1]:2102/M").host == "::1")
        #expect(try CasterURL(parsing: "ntrip://caster.example").mountpoint == nil)
        #expect(try CasterURL(parsing: "ntrip://me%40mail.example@caster.example/M%20X").mountpoint == "M X")
        #expect(try CasterURL(parsing: "ntrip://me%40mail.example@caster.example/M").user == "me@mail.example")
        #expect(plain.description == "ntrip://me@rtk2go.com:2101/MOUNT")
        for bad in ["ntrips://caster/MOUNT", "http://caster/MOUNT", "ntrip:///MOUNT", "ntrip://caster:99999/M",
                    "ntrip://caster/a/b", "ntrip://@caster/M"] {
            #expect(throws: NTRIPConfigurationError.self) { try CasterURL(parsing: bad) }
        }
        do {
            _ = try CasterURL(parsing: "ntrip://me:secret@caster/M")
            Issue.record("a password in the URL was taken")
        } catch {
            #expect(!"\(error)".contains("secret"))
            #expect("\(error)".contains("password file"))
        }
    }

    @Test("the password is the password file's first line, read at every call")
    func passwordFile() throws {
        let directory = try TestPaths.temporaryDirectory()
        let path = directory.appendingPathComponent("password").path
        try "s3cret\r\nsecond line\n".write(toFile: path, atomically: true, encoding: .utf8)
        var configuration = try NTRIPConfiguration(url: "ntrip://me@caster/M", passwordFile: path, softwareVersion: "1")
        #expect(try configuration.credentials()?.password == "s3cret")
        try "changed\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try configuration.credentials()?.password == "changed")
        configuration.passwordFile = directory.appendingPathComponent("missing").path
        #expect(throws: NTRIPConfigurationError.self) { try configuration.credentials() }
        let anonymous = try NTRIPConfiguration(url: "ntrip://caster/M", softwareVersion: "1")
        #expect(try anonymous.credentials() == nil)
    }

    @Test("NTRIP 1 and NTRIP 2 requests, byte for byte")
    func requests() throws {
        let caster = try CasterURL(parsing: "ntrip://user@caster.example/MOUNT")
        let v1 = NTRIPRequest.bytes(caster: caster, mountpoint: "MOUNT", version: .v1, softwareVersion: "0.4.0",
                                    credentials: ("user", "pass"), gga: Array("$GPGGA,x*00\r\n".utf8))
        #expect(String(decoding: v1, as: UTF8.self) == "GET /MOUNT HTTP/1.0\r\nUser-Agent: NTRIP gnss-hat/0.4.0\r\n"
            + "Authorization: Basic dXNlcjpwYXNz\r\nAccept: */*\r\nConnection: close\r\n\r\n")
        let v2 = NTRIPRequest.bytes(caster: caster, mountpoint: "MOUNT", version: .v2, softwareVersion: "0.4.0",
                                    credentials: ("user", "pass"), gga: Array("$GPGGA,x*00\r\n".utf8))
        #expect(String(decoding: v2, as: UTF8.self) == "GET /MOUNT HTTP/1.1\r\nHost: caster.example:2101\r\n"
            + "Ntrip-Version: Ntrip/2.0\r\nUser-Agent: NTRIP gnss-hat/0.4.0\r\nAuthorization: Basic dXNlcjpwYXNz\r\n"
            + "Ntrip-GGA: $GPGGA,x*00\r\nAccept: */*\r\nConnection: close\r\n\r\n")
        let table = NTRIPRequest.bytes(caster: caster, mountpoint: nil, version: .v1, softwareVersion: "1",
                                       credentials: nil, gga: nil)
        #expect(String(decoding: table, as: UTF8.self).hasPrefix("GET / HTTP/1.0\r\n"))
        #expect(Base64.encode(Array("a".utf8)) == "YQ==")
        #expect(Base64.encode(Array("ab".utf8)) == "YWI=")
        #expect(Base64.encode(Array("Aladdin:open sesame".utf8)) == "QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
    }

    @Test("the GGA is GNSSProtocol's: it decodes back to the position")
    func gga() throws {
        let position = NTRIPPosition(latitude: -33.8568, longitude: 151.2153, altitudeMSL: 12.5)
        // 2026-12-05 12:34:56.78 UTC.
        let sentence = position.ggaSentence(now: 1_796_474_096_780_000_000)
        #expect(sentence.suffix(2) == [0x0D, 0x0A])
        guard case .gga(let gga) = try NMEASentence(frame: ArraySlice(sentence)) else {
            Issue.record("not a GGA: \(String(decoding: sentence, as: UTF8.self))")
            return
        }
        #expect(abs((gga.latitude ?? 0) - -33.8568) < 1e-6)
        #expect(abs((gga.longitude ?? 0) - 151.2153) < 1e-6)
        #expect(gga.quality == 1)
        #expect(gga.altitudeMSL == 12.5)
        #expect(gga.time == TimeOfDay(hour: 12, minute: 34, second: 56, nanosecond: 780_000_000))
    }
}
