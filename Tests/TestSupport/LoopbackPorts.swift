// Free loopback ports for the real peers a test starts (brokers, casters, TLS fronts).
import Foundation
import Glibc

/// A loopback port nobody listens on now, below the kernel's ephemeral range, never handed out twice in this
/// process.
public func freeLoopbackPort() throws -> Int {
    // Below the kernel's ephemeral range: a port bind(0) hands out is free only until the next outgoing
    // connection of any process takes it as its local port (a broker started seconds later then finds it
    // in use). Ports handed out once in this process are not handed out again.
    let ephemeralStart = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
        .flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap { Int($0) } }
        ?? 32768
    let range = 10_000..<max(10_001, ephemeralStart)
    for _ in 0..<200 {
        let candidate = Int.random(in: range)
        if handedOutPorts.insert(candidate), try canBind(candidate) { return candidate }
    }
    throw TestSetupError("no free loopback port below \(ephemeralStart) after 200 tries")
}

/// The ports ``freeLoopbackPort()`` has handed out in this process.
private final class HandedOutPorts: @unchecked Sendable {
    private let lock = NSLock()
    private var ports: Set<Int> = []

    /// Whether `port` is new (it is handed out from now on).
    func insert(_ port: Int) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return ports.insert(port).inserted
    }
}

private let handedOutPorts = HandedOutPorts()

/// Whether 127.0.0.1:`port` can be bound now (nothing listens or is connected from it).
private func canBind(_ port: Int) throws -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSetupError("socket: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    return bound == 0
}
