// Where a network thread waits: for its socket (readable, or writable when it has bytes the socket
// could not take yet), for a wake from another thread, or for a timeout (a back-off, a keep-alive).
// One `poll` over the socket and an eventfd; the MQTT client's network thread waits here.
internal import Glibc

/// What a wait of a ``ReadinessWaiter`` ended with.
public struct DescriptorReadiness: Sendable, Equatable {
    public var readable = false
    public var writable = false
    /// Error or hang-up on the descriptor (`POLLERR`, `POLLHUP`, `POLLNVAL`): the next read tells what
    /// happened.
    public var failed = false

    public init(readable: Bool = false, writable: Bool = false, failed: Bool = false) {
        self.readable = readable
        self.writable = writable
        self.failed = failed
    }
}

/// One thread waits here (`poll` on a descriptor and an eventfd ``Waker``); any thread may ``wake()`` it.
/// A wake that comes before the wait is not lost: the next wait returns at once. Made under a test's
/// seam mock, its waits stay under it on whatever thread they run.
public final class ReadinessWaiter: Sendable {
    private let waker: Waker
    private let seam: SeamMock?

    /// Makes the eventfd (`eventfd`).
    public init() throws(SystemError) {
        seam = SeamMock.inForce
        waker = try Waker()
    }

    deinit {
        waker.close()
    }

    /// Waits until `descriptor` is ready as asked (readable; writable too when `forWriting`), a
    /// ``wake()``, or `timeout` (`nil`: no limit); with no descriptor, only for the wake or the timeout
    /// (`poll`). Consumes the wakes it returns for. A wait a signal interrupts (`EINTR`), or a `poll`
    /// that fails, ends early with nothing ready: the caller looks at its timers and waits again.
    public func wait(descriptor: CInt?, forWriting: Bool, timeout: Duration?) -> DescriptorReadiness {
        withSeamMock(seam) {
            var fds = [pollfd(fd: waker.rawDescriptor, events: Int16(POLLIN), revents: 0)]
            if let descriptor {
                let events = Int16(POLLIN) | (forWriting ? Int16(POLLOUT) : 0)
                fds.append(pollfd(fd: descriptor, events: events, revents: 0))
            }
            let milliseconds = timeout?.pollMilliseconds ?? -1
            let count = fds.count
            let ready = fds.withUnsafeMutableBufferPointer { raw -> CInt in
                guard let base = raw.baseAddress else { return -1 }
                return system_poll(base, count, milliseconds, "readiness wait")
            }
            guard ready > 0 else { return DescriptorReadiness() }
            if fds[0].revents & Int16(POLLIN) != 0 { waker.drain() }
            guard fds.count > 1 else { return DescriptorReadiness() }
            let revents = fds[1].revents
            return DescriptorReadiness(
                readable: revents & Int16(POLLIN) != 0, writable: revents & Int16(POLLOUT) != 0,
                failed: revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0)
        }
    }

    /// Ends the current wait, or the next one if none is in progress (`write` to the eventfd).
    public func wake() {
        waker.wake()
    }
}
