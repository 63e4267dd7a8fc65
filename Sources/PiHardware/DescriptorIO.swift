// Reading and writing a non-blocking descriptor with poll(2) and a time-out: shared by the serial
// port and the pseudo-terminal, so both report a hang-up the same way instead of spinning.
internal import Glibc

/// What a read with a time-out saw.
enum ReadOutcome {
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
enum WriteOutcome {
    case written
    /// Poll found the descriptor not writable within the time-out.
    case timedOut(FailedCall)
    case hungUp(FailedCall)
    case failed(FailedCall)
}

enum DescriptorIO {
    /// Waits with `poll` for input, then reads at most `maxCount` bytes with `read`.
    static func read(_ fd: CInt, device: String, maxCount: Int, timeout: Duration?, wake: Waker? = nil)
        -> ReadOutcome
    {
        guard maxCount > 0 else { return .bytes([]) }
        var pfds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        if let wake { pfds.append(pollfd(fd: wake.rawDescriptor, events: Int16(POLLIN), revents: 0)) }
        let milliseconds = timeout?.pollMilliseconds ?? -1
        let ready = retryingInterrupts("poll", device) { system_poll(&pfds, pfds.count, milliseconds, device) }
        switch ready {
        case .failure(let failure): return .failed(failure)
        case .success(0): return .timedOut
        case .success: break
        }
        let revents = CInt(pfds[0].revents)
        if revents == 0, let wake {
            // Woken, not readable: the caller looks at why.
            wake.drain()
            return .timedOut
        }
        if revents & CInt(POLLNVAL) != 0 {
            preconditionFailure("PiHardware bug: poll on \(device) reported a closed descriptor")
        }
        if revents & CInt(POLLIN) == 0 && revents & CInt(POLLHUP | POLLERR) != 0 {
            return .hungUp(FailedCall(call: "poll", device: device, errno: nil))
        }
        var bytes = [UInt8](repeating: 0, count: maxCount)
        let count = bytes.withUnsafeMutableBytes { buffer in
            retryingInterrupts("read", device) { system_read(fd, buffer.baseAddress, buffer.count, device) }
        }
        switch count {
        case .failure(let failure) where failure.errno == .wouldBlock:
            return .timedOut
        case .failure(let failure):
            return .failed(failure)
        case .success(0):
            return .hungUp(FailedCall(call: "read", device: device, errno: nil))
        case .success(let n):
            bytes.removeLast(maxCount - n)
            return .bytes(bytes)
        }
    }

    /// Writes all bytes with `write`, waiting with `poll` (up to `timeout` each time) while the
    /// descriptor cannot take more.
    static func writeAll(_ fd: CInt, device: String, bytes: [UInt8], timeout: Duration) -> WriteOutcome {
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
