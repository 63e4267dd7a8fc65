// /dev/ppsN through the LinuxPPS ioctls (RFC 2783 in the kernel, <linux/pps.h>).
internal import CLinuxShims
internal import Glibc
public import LinuxSystem

/// Why a PPS call failed.
public enum PPSError: HardwareFault, Equatable {
    /// `ENOENT`: no such PPS device (is the pps-gpio overlay loaded?).
    case notFound(FailedCall)
    /// `EACCES`/`EPERM`: the user may not open the device.
    case permissionDenied(FailedCall)
    /// The source cannot wait for events (`PPS_CANWAIT`) or capture the edges asked for; or
    /// `ENOTTY`: not a PPS device.
    case unsupported(String, device: String)
    /// `ENODEV`: the source went away.
    case vanished(FailedCall)
    /// The device was closed by `close()`.
    case closed(device: String)
    /// Any other failed call.
    case failed(FailedCall)

    /// Maps a failed call to the error a caller can act on (also for test doubles).
    public init(_ failure: FailedCall) {
        switch failure.errno {
        case Errno.noSuchFileOrDirectory?: self = .notFound(failure)
        case Errno.permissionDenied?, Errno.notPermitted?: self = .permissionDenied(failure)
        case Errno.notATerminal?: self = .unsupported("not a PPS source (\(failure))", device: failure.device)
        case Errno.noSuchDevice?, Errno.noSuchDeviceOrAddress?: self = .vanished(failure)
        default: self = .failed(failure)
        }
    }

    public var failedCall: FailedCall? {
        switch self {
        case .notFound(let f), .permissionDenied(let f), .vanished(let f), .failed(let f): f
        case .unsupported, .closed: nil
        }
    }

    public var deviceIsGone: Bool {
        switch self {
        case .notFound, .vanished, .closed: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .notFound(let f): "no such PPS device (is the pps-gpio overlay loaded?): \(f)"
        case .permissionDenied(let f): "no permission for the PPS device: \(f)"
        case .unsupported(let what, let device): "\(device): \(what)"
        case .vanished(let f): "the PPS device went away: \(f)"
        case .closed(let device): "\(device) is closed"
        case .failed(let f): "PPS call failed: \(f)"
        }
    }
}

/// A kernel PPS source, `/dev/ppsN` (e.g. from the `pps-gpio` overlay), read with the LinuxPPS
/// ioctls: `PPS_GETCAP`, `PPS_GETPARAMS`/`PPS_SETPARAMS` and `PPS_FETCH`. Timestamps are the
/// kernel's `CLOCK_REALTIME` at the edge. "Assert" is reported as `.rising`, "clear" as
/// `.falling`.
///
/// `nextEdge(until:)` is the protocol's default, a `PPS_FETCH` of 50 ms at a time that looks at
/// the waker in between, not a `poll` on the device beside the waker: the pps char device's
/// `poll` says "readable" at all times in kernels without the 2025 fix "pps: fix poll support"
/// (marked for stable kernels from 5.4; a `poll` there would spin), and the fixed one keeps the
/// last fetched event per device, not per open file, so gpsd or chrony fetching the same source
/// can hide an edge from us until the next one. The other wait, a `PPS_FETCH` with no time-out,
/// can only be cut short by a signal.
public final class PPSDevice: EdgeEventSource {
    /// The device path.
    public let path: String
    public var name: String { path }
    /// The edges captured.
    public let edges: GPIOEdges

    private struct State {
        var fd: CInt
        var lastAssert: UInt32?
        var lastClear: UInt32?
        var pending: [EdgeEvent] = []
    }

    private let state: Lock<State>

    /// How many wake-ups without a wanted edge one `nextEdge` call sits through.
    static let maxWakeups = 3

    /// Opens `path` (`open`), checks it can wait for events (`PPS_GETCAP`), and turns on
    /// capture of `edges` with timespec timestamps (`PPS_GETPARAMS`, `PPS_SETPARAMS`; when the
    /// user may not change the parameters, the current ones must already capture `edges`).
    public init(path: String, edges: GPIOEdges = .rising) throws(PPSError) {
        let fd: CInt
        switch retryingInterrupts("open", path, { system_open(path, O_RDWR | O_CLOEXEC) }) {
        case .success(let value): fd = value
        case .failure(let failure): throw PPSError(failure)
        }
        self.path = path
        self.edges = edges
        do throws(PPSError) {
            try Self.enableCapture(fd, path: path, edges: edges)
        } catch {
            _ = system_close(fd, path)
            throw error
        }
        // A zero time-out returns the current counts at once, so the first edge reported is
        // a new one rather than whatever the source saw before we opened it.
        var initial = State(fd: fd)
        switch Self.fetch(fd, path: path, timeout: .zero) {
        case .success(let info):
            initial.lastAssert = info.assert_sequence
            initial.lastClear = info.clear_sequence
        case .failure(let failure) where failure.errno == .timedOut:
            break
        case .failure(let failure):
            _ = system_close(fd, path)
            throw PPSError(failure)
        }
        state = Lock(initial)
    }

    deinit { close() }

    /// Closes the device (`close`).
    public func close() {
        state.withLock { state in
            if state.fd >= 0 { _ = system_close(state.fd, path) }
            state.fd = -1
        }
    }

    /// Waits up to `timeout` for the next captured edge (`PPS_FETCH`); nil on time-out.
    ///
    /// `PPS_FETCH` waits for the edge after the call, so an edge that came between two calls
    /// is first looked for with a zero time-out, which returns the current counts at once.
    /// A wake-up by an edge not asked for (another reader set the source to capture both)
    /// waits again, at most `maxWakeups` times, so a call never waits much past `timeout`
    /// times that.
    public func nextEdge(timeout: Duration) throws(PPSError) -> EdgeEvent? {
        try state.withLock { state throws(PPSError) -> EdgeEvent? in
            if !state.pending.isEmpty { return state.pending.removeFirst() }
            guard state.fd >= 0 else { throw .closed(device: path) }
            let waits = [Duration.zero] + Array(repeating: timeout, count: Self.maxWakeups)
            for wait in waits {
                let info: pps_kinfo
                switch Self.fetch(state.fd, path: path, timeout: wait) {
                case .success(let value): info = value
                case .failure(let failure) where failure.errno == .timedOut:
                    if wait == .zero { continue }
                    return nil
                case .failure(let failure): throw PPSError(failure)
                }
                state.pending = newEdges(info, &state)
                if !state.pending.isEmpty { return state.pending.removeFirst() }
            }
            return nil
        }
    }

    /// The edges in `info` not reported yet, oldest first.
    private func newEdges(_ info: pps_kinfo, _ state: inout State) -> [EdgeEvent] {
        var events: [EdgeEvent] = []
        if edges != .falling, info.assert_sequence != state.lastAssert, info.assert_sequence != 0 {
            events.append(EdgeEvent(
                kind: .rising, timestamp: Self.duration(info.assert_tu), clock: .realtime,
                sequence: UInt64(info.assert_sequence)))
        }
        if edges != .rising, info.clear_sequence != state.lastClear, info.clear_sequence != 0 {
            events.append(EdgeEvent(
                kind: .falling, timestamp: Self.duration(info.clear_tu), clock: .realtime,
                sequence: UInt64(info.clear_sequence)))
        }
        state.lastAssert = info.assert_sequence
        state.lastClear = info.clear_sequence
        return events.sorted { $0.timestamp < $1.timestamp }
    }

    private static func enableCapture(_ fd: CInt, path: String, edges: GPIOEdges) throws(PPSError) {
        var capabilities: CInt = 0
        let getcap = cshim_request_PPS_GETCAP()
        if case .failure(let failure) = retryingInterrupts(.ioctl("PPS_GETCAP"), path, {
            system_ioctl(fd, getcap, &capabilities, .ioctl("PPS_GETCAP"), path)
        }) {
            throw PPSError(failure)
        }
        let wanted: CInt = switch edges {
        case .rising: CInt(PPS_CAPTUREASSERT)
        case .falling: CInt(PPS_CAPTURECLEAR)
        case .both: CInt(PPS_CAPTUREBOTH)
        }
        guard capabilities & CInt(PPS_CANWAIT) != 0 else {
            throw .unsupported("the source cannot wait for events (no PPS_CANWAIT)", device: path)
        }
        guard capabilities & wanted == wanted else {
            throw .unsupported("the source cannot capture \(edges) edges", device: path)
        }
        var params = pps_kparams()
        let getparams = cshim_request_PPS_GETPARAMS()
        if case .failure(let failure) = retryingInterrupts(.ioctl("PPS_GETPARAMS"), path, {
            system_ioctl(fd, getparams, &params, .ioctl("PPS_GETPARAMS"), path)
        }) {
            throw PPSError(failure)
        }
        if params.mode & wanted == wanted && params.mode & CInt(PPS_TSFMT_TSPEC) != 0 { return }
        let current = params.mode
        params.mode |= wanted | CInt(PPS_TSFMT_TSPEC)
        let setparams = cshim_request_PPS_SETPARAMS()
        let result = retryingInterrupts(.ioctl("PPS_SETPARAMS"), path) {
            system_ioctl(fd, setparams, &params, .ioctl("PPS_SETPARAMS"), path)
        }
        if case .failure(let failure) = result {
            // Only root may change the parameters; an unprivileged reader can still use a
            // source that already captures what we need.
            let denied = failure.errno == .permissionDenied || failure.errno == .notPermitted
            if !(denied && current & wanted == wanted) { throw PPSError(failure) }
        }
    }

    private static func fetch(_ fd: CInt, path: String, timeout: Duration) -> Result<pps_kinfo, FailedCall> {
        var data = pps_fdata()
        let nanos = timeout.clampedNanoseconds
        data.timeout.sec = nanos / 1_000_000_000
        data.timeout.nsec = Int32(nanos % 1_000_000_000)
        data.timeout.flags = 0
        let request = cshim_request_PPS_FETCH()
        return retryingInterrupts(.ioctl("PPS_FETCH"), path) {
            system_ioctl(fd, request, &data, .ioctl("PPS_FETCH"), path)
        }.map { _ in data.info }
    }

    private static func duration(_ time: pps_ktime) -> Duration {
        .seconds(time.sec) + .nanoseconds(Int64(time.nsec))
    }
}
