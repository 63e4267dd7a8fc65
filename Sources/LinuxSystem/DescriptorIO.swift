// Reading and writing a non-blocking descriptor with poll(2) and a time-out: shared by the serial
// port and the pseudo-terminal, so both report a hang-up the same way instead of spinning.
internal import Glibc

/// What a read with a time-out saw.
package enum ReadOutcome {
    /// Bytes arrived.
    case bytes([UInt8])
    /// Nothing arrived in time (or a wake-up carried no data).
    case timedOut
    /// The far side hung up: `POLLHUP`/`POLLERR` without data, or end of file.
    case hungUp(FailedCall)
    /// A call failed with an errno.
    case failed(FailedCall)
}

/// What a write of all bytes saw.
package enum WriteOutcome {
    case written
    /// Poll found the descriptor not writable within the time-out.
    case timedOut(FailedCall)
    case hungUp(FailedCall)
    case failed(FailedCall)
}

/// What a wait for input saw.
package enum InputReadiness {
    /// The descriptor has input (or an error condition that a read will report).
    case readable
    /// The waker was woken and the descriptor has no input; the waker is drained.
    case woken
    /// Nothing happened within the time-out.
    case timedOut
    /// The far side hung up: `POLLHUP`/`POLLERR` without input.
    case hungUp(FailedCall)
    /// `poll` failed, or reported the descriptor not open (`POLLNVAL`, as `EBADF`).
    case failed(FailedCall)
}

package enum DescriptorIO {
    /// Waits with `poll` until `fd` has input, `wake` (when given) is woken, or `timeout` (nil: none)
    /// passes. Input wins over a wake that came at the same time: the wake stays pending for the
    /// next wait. The `pollfd`s live on the stack, not in an array per call.
    package static func waitForInput(_ fd: CInt, device: String, timeout: Duration?, wake: Waker?) -> InputReadiness {
        let milliseconds = timeout?.pollMilliseconds ?? -1
        let count = wake == nil ? 1 : 2
        // The revents of `fd`, nil when poll timed out.
        let polled = withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 2) { pfds -> Result<CInt?, FailedCall> in
            guard let base = pfds.baseAddress else {
                return .failure(FailedCall(call: "poll", device: device, errno: .noMemory))
            }
            pfds.initialize(repeating: pollfd(fd: -1, events: 0, revents: 0))
            pfds[0] = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if let wake { pfds[1] = pollfd(fd: wake.rawDescriptor, events: Int16(POLLIN), revents: 0) }
            return retryingInterrupts("poll", device) { system_poll(base, count, milliseconds, device) }
                .map { ready in ready == 0 ? nil : CInt(pfds[0].revents) }
        }
        let revents: CInt
        switch polled {
        case .failure(let failure): return .failed(failure)
        case .success(nil): return .timedOut
        case .success(let value?): revents = value
        }
        if revents == 0, let wake {
            // Woken, not readable: the caller looks at why.
            wake.drain()
            return .woken
        }
        if revents & CInt(POLLNVAL) != 0 {
            // Not an open descriptor (closed before the wait: a bug of the caller's): reported as
            // `read` would report it, EBADF, instead of stopping the process.
            return .failed(FailedCall(call: "poll", device: device, errno: .badFileDescriptor))
        }
        if revents & CInt(POLLIN) == 0 && revents & CInt(POLLHUP | POLLERR) != 0 {
            return .hungUp(FailedCall(call: "poll", device: device, errno: nil))
        }
        return .readable
    }

    /// Waits with `poll` for input (see ``waitForInput(_:device:timeout:wake:)``), then reads at
    /// most `maxCount` bytes with `read`.
    package static func read(_ fd: CInt, device: String, maxCount: Int, timeout: Duration?, wake: Waker? = nil)
        -> ReadOutcome
    {
        var bytes: [UInt8] = []
        let outcome = read(fd, device: device, into: &bytes, maxCount: maxCount, timeout: timeout, wake: wake)
        // `bytes` has room for `maxCount` (64 KiB for a socket); what is returned keeps only what came.
        if case .bytes = outcome { return .bytes(bytes.withUnsafeBufferPointer { Array($0) }) }
        return outcome
    }

    /// As ``read(_:device:maxCount:timeout:wake:)``, the bytes left in `buffer` (empty on a time-out
    /// or a wake), reusing its storage: when nothing else holds it, no allocation. `.bytes` carries
    /// an empty array then; the bytes are in `buffer`.
    package static func read(
        _ fd: CInt, device: String, into buffer: inout [UInt8], maxCount: Int, timeout: Duration?, wake: Waker?
    ) -> ReadOutcome {
        buffer.removeAll(keepingCapacity: true)
        guard maxCount > 0 else { return .bytes([]) }
        switch waitForInput(fd, device: device, timeout: timeout, wake: wake) {
        case .readable: break
        case .woken, .timedOut: return .timedOut
        case .hungUp(let failure): return .hungUp(failure)
        case .failed(let failure): return .failed(failure)
        }
        // Read straight into `buffer`'s spare room (its storage reused while nothing else holds it): no
        // temporary (above 1 KiB that was a heap allocation per read), no copy, no zero fill. Swift 6.2
        // has no `append(addingCapacity:)`: there the bytes are read into a temporary and appended.
        var outcome = ReadOutcome.bytes([])
        func readInto(_ space: UnsafeMutableBufferPointer<UInt8>) -> Int {
            let count = retryingInterrupts("read", device) {
                system_read(fd, UnsafeMutableRawPointer(space.baseAddress), space.count, device)
            }
            switch count {
            case .failure(let failure) where failure.errno == .wouldBlock:
                outcome = .timedOut
            case .failure(let failure):
                outcome = .failed(failure)
            case .success(0):
                outcome = .hungUp(FailedCall(call: "read", device: device, errno: nil))
            case .success(let n):
                return n
            }
            return 0
        }
        #if compiler(>=6.3)
        buffer.append(addingCapacity: maxCount) { span in
            span.withUnsafeMutableBufferPointer { space, initialized in
                initialized = readInto(space)
            }
        }
        #else
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maxCount) { space in
            let count = readInto(space)
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: space[..<count]))
        }
        #endif
        return outcome
    }

    /// Writes all bytes with `write`, waiting with `poll` (up to `timeout` each time) while the
    /// descriptor cannot take more.
    package static func writeAll(_ fd: CInt, device: String, bytes: [UInt8], timeout: Duration) -> WriteOutcome {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = retryingInterrupts("write", device) {
                    system_write(fd, buffer.baseAddress.map { $0 + offset }, buffer.count - offset, device)
                }
                switch written {
                case .success(let n):
                    offset += n
                    continue
                case .failure(let failure) where failure.errno == .wouldBlock:
                    break
                case .failure(let failure):
                    return .failed(failure)
                }
                var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let ready = retryingInterrupts("poll", device) {
                    system_poll(&pfd, 1, timeout.pollMilliseconds, device)
                }
                switch ready {
                case .failure(let failure):
                    return .failed(failure)
                case .success(0):
                    return .timedOut(FailedCall(call: "poll(POLLOUT)", device: device, errno: .timedOut))
                case .success:
                    let revents = CInt(pfd.revents)
                    if revents & CInt(POLLOUT) == 0 && revents & CInt(POLLHUP | POLLERR) != 0 {
                        return .hungUp(FailedCall(call: "poll(POLLOUT)", device: device, errno: nil))
                    }
                }
            }
            return .written
        }
    }
}

extension Waker {
    /// Waits with no time-out until this waker or `wake` is woken (`poll` on both eventfds) and
    /// drains the one it saw: true when this one was woken (it wins when both were, and `wake`
    /// stays pending for the next wait), false when `wake` was. For in-process sources that say
    /// "ready" with a waker of their own, as the simulator's and the test fakes' edge sources do.
    public func wait(until wake: Waker) throws(SystemError) -> Bool {
        switch DescriptorIO.waitForInput(rawDescriptor, device: "eventfd", timeout: nil, wake: wake) {
        case .readable:
            drain()
            return true
        case .woken, .timedOut:
            return false
        case .hungUp(let failure), .failed(let failure):
            throw SystemError(failure)
        }
    }

    /// Waits until this waker is woken or `timeout` passes: true (and drained) when woken. A failed
    /// `poll` counts as woken, so the waiter re-checks why it waits rather than sleeping on.
    public func wait(timeout: Duration) -> Bool {
        switch DescriptorIO.waitForInput(rawDescriptor, device: "eventfd", timeout: timeout, wake: nil) {
        case .readable:
            drain()
            return true
        case .timedOut, .woken:
            return false
        case .hungUp, .failed:
            return true
        }
    }

    /// Whether the waker was woken since it was last drained (`poll` with a zero time-out);
    /// drains it when it was. A failed `poll` counts as woken, so a waiter re-checks why it waits
    /// rather than waiting on.
    public func takeWake() -> Bool {
        wait(timeout: .zero)
    }
}
