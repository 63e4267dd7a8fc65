@testable import GPSD
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
}
