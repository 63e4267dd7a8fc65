// Where the client's network thread waits: for the broker's socket (readable, or writable when
// libmosquitto has bytes the socket could not take yet), for a wake from another thread, or for a
// timeout (a back-off, libmosquitto's keep-alive). One `poll` over the socket and an eventfd.
internal import Glibc
internal import LinuxSystem

/// What a wait ended with.
struct SocketReadiness: Sendable, Equatable {
    var readable = false
    var writable = false
    /// Error or hang-up on the socket: the next read tells what happened.
    var failed = false
}

/// One thread waits here (`poll` on the socket and LinuxSystem's eventfd ``Waker``); any thread may
/// ``wake()`` it. A wake that comes before the wait is not lost: the next wait returns at once.
final class SocketWaiter: Sendable {
    private let waker: Waker

    /// Makes the eventfd.
    init() throws(MQTTError) {
        do {
            waker = try Waker()
        } catch {
            throw MQTTError(call: "eventfd", code: .system(error.failedCall?.errno?.rawValue ?? 0), reason: "\(error)")
        }
    }

    deinit {
        waker.close()
    }

    /// Waits until `socket` is ready as asked, a ``wake()``, or `timeout` (`nil`: no limit); with no
    /// socket, only for the wake or the timeout. Consumes the wakes it returns for.
    func wait(socket: CInt?, forWriting: Bool, timeout: Duration?) -> SocketReadiness {
        var fds = [pollfd(fd: waker.rawDescriptor, events: Int16(POLLIN), revents: 0)]
        if let socket {
            let events = Int16(POLLIN) | (forWriting ? Int16(POLLOUT) : 0)
            fds.append(pollfd(fd: socket, events: events, revents: 0))
        }
        let milliseconds: CInt = timeout.map { timeout in
            let (seconds, attoseconds) = max(timeout, .zero).components
            // Rounded up, so a wait never ends just before its deadline.
            return CInt(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
        } ?? -1
        // EINTR ends the wait early; the caller looks at its timers and waits again.
        guard poll(&fds, nfds_t(fds.count), milliseconds) > 0 else { return SocketReadiness() }
        if fds[0].revents & Int16(POLLIN) != 0 { waker.drain() }
        guard fds.count > 1 else { return SocketReadiness() }
        let revents = fds[1].revents
        return SocketReadiness(readable: revents & Int16(POLLIN) != 0, writable: revents & Int16(POLLOUT) != 0,
                               failed: revents & Int16(POLLERR | POLLHUP) != 0)
    }

    /// Ends the current wait, or the next one if none is in progress (`write` to the eventfd).
    func wake() {
        waker.wake()
    }
}
