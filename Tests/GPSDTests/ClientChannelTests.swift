@testable import GPSD
import GPSDProtocol
import LinuxSystem
import Testing

@Suite("A client's channel")
struct ClientChannelTests {
    @Test("after endReports, a report still on its way is dropped: the device's close is the last line")
    func reportsEndWithTheCloseLine() throws {
        let listener = try SocketListener(address: SocketAddress(parsing: "127.0.0.1:0", defaultPort: 0))
        defer { listener.close() }
        let client = try SocketConnection.connect(to: listener.address)
        let accepted = try #require(try listener.accept())
        let channel = ClientChannel(id: 1, socket: accepted, queueLimit: 1 << 16, maxDroppedLines: 10)
        var policy = WatchPolicy()
        policy.enable = true
        policy.json = true
        channel.policy = policy
        #expect(channel.deliver(.tpv(Array("first\r\n".utf8)), path: "/dev/x") == .done)
        #expect(channel.endReports(with: [Array("closed\r\n".utf8)]) == .done)
        // The source's thread, still delivering: nothing may follow the close line.
        #expect(channel.deliver(.sky(Array("late\r\n".utf8)), path: "/dev/x") == .done)
        // Replies from the loop are not reports: they still go out (the loop closes the client next).
        #expect(channel.write([Array("reply\r\n".utf8)]) == .done)
        channel.close()
        var received: [UInt8] = []
        while true {
            do {
                let bytes = try client.receive(timeout: .seconds(5))
                if bytes.isEmpty { break }
                received += bytes
            } catch {
                break
            }
        }
        #expect(String(decoding: received, as: UTF8.self) == "first\r\nclosed\r\nreply\r\n")
    }

    @Test("a report is encoded once: every watcher that wants it is given the source's own bytes")
    func reportsShareTheirBytes() throws {
        let tpv = Array("{\"class\":\"TPV\",\"mode\":3}\r\n".utf8)
        let source = tpv.withUnsafeBufferPointer { $0.baseAddress }
        var json = WatchPolicy()
        json.enable = true
        json.json = true
        var both = json
        both.nmea = true
        for policy in [json, both] {
            let line = try #require(policy.line(for: .tpv(tpv), path: "/dev/x"))
            #expect(line == tpv)
            // The same storage, not a copy per watcher.
            #expect(line.withUnsafeBufferPointer { $0.baseAddress } == source)
        }
        var off = json
        off.enable = false
        #expect(off.line(for: .tpv(tpv), path: "/dev/x") == nil)
        var nmeaOnly = WatchPolicy()
        nmeaOnly.enable = true
        #expect(nmeaOnly.line(for: .tpv(tpv), path: "/dev/x") == nil)
    }

    @Test("twenty watchers of one report all receive the same bytes")
    func twentyWatchersIdenticalBytes() throws {
        let listener = try SocketListener(address: SocketAddress(parsing: "127.0.0.1:0", defaultPort: 0))
        defer { listener.close() }
        var policy = WatchPolicy()
        policy.enable = true
        policy.json = true
        var pairs: [(client: SocketConnection, channel: ClientChannel)] = []
        for id in 1...20 {
            let client = try SocketConnection.connect(to: listener.address)
            let accepted = try #require(try listener.accept())
            let channel = ClientChannel(id: UInt64(id), socket: accepted, queueLimit: 1 << 16, maxDroppedLines: 10)
            channel.policy = policy
            pairs.append((client, channel))
        }
        let reports: [GPSDEvent] = [.tpv(Array("tpv 1\r\n".utf8)), .sky(Array("sky 1\r\n".utf8)),
                                    .tpv(Array("tpv 2\r\n".utf8))]
        for report in reports {
            for pair in pairs { #expect(pair.channel.deliver(report, path: "/dev/x") == .done) }
        }
        for pair in pairs {
            pair.channel.close()
            var received: [UInt8] = []
            while let bytes = try? pair.client.receive(timeout: .seconds(5)), !bytes.isEmpty { received += bytes }
            #expect(String(decoding: received, as: UTF8.self) == "tpv 1\r\nsky 1\r\ntpv 2\r\n")
            pair.client.close()
        }
    }
}
