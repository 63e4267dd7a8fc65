// Host names resolved (getaddrinfo), and the client connect and wait a Waker can abandon.
import Glibc
@testable import LinuxSystem
import Testing

@Suite("Socket client: name resolution, interruptible connect and wait")
struct SocketClientTests {
    @Test("numeric addresses and localhost resolve; a name with no address is a typed error")
    func resolve() throws {
        #expect(try SocketAddress.resolve(host: "127.0.0.1", port: 2101) == [.ipv4("127.0.0.1", port: 2101)])
        let local = try SocketAddress.resolve(host: "localhost", port: 80)
        #expect(local.contains(.ipv4("127.0.0.1", port: 80)) || local.contains(.ipv6("::1", port: 80)))
        #expect(throws: SocketError.self) { try SocketAddress.resolve(host: "no-such-host.invalid", port: 1) }
        #expect(throws: SocketError.self) { try SocketAddress.resolve(host: "", port: 1) }
    }

    @Test("a failure injected into getaddrinfo is an unresolved name")
    func injected() throws {
        let mock = SeamMock()
        mock.fail("getaddrinfo", with: .noMemory)
        SeamMock.$current.withValue(mock) {
            do throws(SocketError) {
                _ = try SocketAddress.resolve(host: "127.0.0.1", port: 1)
                Issue.record("resolved despite the injected failure")
            } catch {
                guard case .unresolvedName(let host, _) = error else {
                    Issue.record("\(error)")
                    return
                }
                #expect(host == "127.0.0.1")
            }
        }
        #expect(mock.calls == ["getaddrinfo"])
    }

    @Test("connect(to:wake:) reaches a listener; wait reports readable; a wake ends a wait")
    func connectAndWait() throws {
        let listener = try SocketListener(address: .ipv4("127.0.0.1", port: 0))
        let waker = try Waker()
        let client = try #require(try SocketConnection.connect(to: listener.address, wake: waker))
        let server = try acceptWaiting(listener)
        try server.sendAll(Array("caster".utf8))
        let ready = try client.wait(readable: true, writable: false, wake: waker)
        #expect(ready.readable && !ready.woken)
        var buffer = [UInt8](repeating: 0, count: 16)
        let outcome = try buffer.withUnsafeMutableBytes { try client.receive(into: $0) }
        #expect(outcome == .received(6))
        waker.wake()
        let woken = try client.wait(readable: true, writable: false, wake: waker)
        #expect(woken.woken && !woken.readable)
        server.close()
        let ended = try client.wait(readable: true, writable: false, wake: waker)
        #expect(ended.readable)
        #expect(try buffer.withUnsafeMutableBytes { try client.receive(into: $0) } == .endOfStream)
    }

    @Test("nobody listening: connection refused")
    func refused() throws {
        let listener = try SocketListener(address: .ipv4("127.0.0.1", port: 0))
        let address = listener.address
        listener.close()
        let waker = try Waker()
        do throws(SocketError) {
            _ = try SocketConnection.connect(to: address, wake: waker)
            Issue.record("connected to a closed port")
        } catch {
            #expect(kind(error) == "connectionRefused")
        }
    }
}
