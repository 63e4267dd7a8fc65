// The host's side of a simulated hat's UART, counting for the hat's traffic what the host reads and
// writes.
import GNSSHat
import LinuxSystem

/// The host's serial link, counting: a chunk read counts as processed when the reader comes
/// back for more (its loop handles a chunk completely before reading again).
final class TrafficCountingLink: SerialLink {
    let inner: any SerialLink
    let traffic: HatTraffic
    private let pending = Lock(0)

    init(inner: any SerialLink, traffic: HatTraffic) {
        self.inner = inner
        self.traffic = traffic
        traffic.hostOpened()
    }

    var name: String { inner.name }

    func read(maxCount: Int, timeout: Duration) throws -> [UInt8] {
        try counting { try inner.read(maxCount: maxCount, timeout: timeout) }
    }

    func read(maxCount: Int, until waker: Waker) throws -> [UInt8] {
        try counting { try inner.read(maxCount: maxCount, until: waker) }
    }

    private func counting(_ read: () throws -> [UInt8]) throws -> [UInt8] {
        let done = pending.withLock { count -> Int in
            defer { count = 0 }
            return count
        }
        if done > 0 { traffic.hostConsumed(done) }
        let bytes = try read()
        pending.withLock { $0 = bytes.count }
        return bytes
    }

    func write(_ bytes: [UInt8]) throws {
        traffic.hostWriting(bytes.count)
        do {
            try inner.write(bytes)
        } catch {
            traffic.hostWriteFailed(bytes.count)
            throw error
        }
    }

    func setSpeed(_ speed: Int) throws {
        try inner.setSpeed(speed)
    }

    func discardInput() throws {
        try inner.discardInput()
        traffic.hostOpened()
    }

    func close() {
        inner.close()
        pending.withLock { $0 = 0 }
        traffic.hostClosed()
    }

    /// What the receiver sends from now on is never read (a receiver whose power-off has not
    /// taken yet still talks), so it is not in flight: as if the host had closed the port.
    func endReading() {
        inner.endReading()
        pending.withLock { $0 = 0 }
        traffic.hostClosed()
    }
}
