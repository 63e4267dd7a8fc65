import CLinuxShims
import Glibc
import LinuxSystem
@testable import PiHardware
import Testing

/// A LinuxPPS source behind the seam: `open` of its path hands out a /dev/null descriptor and
/// the PPS ioctls read and write the kernel structs the way drivers/pps/pps.c does. A waiting
/// `PPS_FETCH` delivers the next scripted edge, or `ETIMEDOUT` when none is left.
final class FakePPSSource: Sendable {
    struct State {
        var capabilities = CInt(PPS_CAPTUREBOTH | PPS_CANWAIT | PPS_TSFMT_TSPEC)
        var mode = CInt(PPS_TSFMT_TSPEC)
        var setParamsError: Errno?
        var info = pps_kinfo()
        var script: [(assert: Bool, sec: Int64, nsec: Int32)] = []
        var fetches: [Int64] = []
    }

    let path = "/dev/pps0"
    let state: Lock<State>

    init(_ configure: (inout State) -> Void = { _ in }) {
        var state = State()
        configure(&state)
        self.state = Lock(state)
    }

    /// Edges that have happened before anyone opened the device.
    func past(asserts: UInt32, clears: UInt32) {
        state.withLock {
            $0.info.assert_sequence = asserts
            $0.info.clear_sequence = clears
        }
    }

    var mock: SeamMock {
        SeamMock(
            open: { [path] requested, _ in requested == path ? Glibc.open("/dev/null", O_RDWR | O_CLOEXEC) : nil },
            ioctl: { [self] _, request, arg in
                guard let arg else { return nil }
                return self.ioctl(request, arg)
            })
    }

    private func ioctl(_ request: UInt, _ arg: UnsafeMutableRawPointer) -> CInt? {
        state.withLock { state -> CInt? in
            switch request {
            case cshim_request_PPS_GETCAP():
                arg.assumingMemoryBound(to: CInt.self).pointee = state.capabilities
            case cshim_request_PPS_GETPARAMS():
                var params = pps_kparams()
                params.api_version = CInt(PPS_API_VERS)
                params.mode = state.mode
                arg.assumingMemoryBound(to: pps_kparams.self).pointee = params
            case cshim_request_PPS_SETPARAMS():
                if let errno = state.setParamsError {
                    Glibc.errno = errno.rawValue
                    return -1
                }
                state.mode = arg.assumingMemoryBound(to: pps_kparams.self).pointee.mode
            case cshim_request_PPS_FETCH():
                let data = arg.assumingMemoryBound(to: pps_fdata.self)
                let timeout = data.pointee.timeout
                state.fetches.append(timeout.sec * 1_000_000_000 + Int64(timeout.nsec))
                if timeout.sec != 0 || timeout.nsec != 0 {
                    guard !state.script.isEmpty else {
                        Glibc.errno = ETIMEDOUT
                        return -1
                    }
                    let edge = state.script.removeFirst()
                    let time = pps_ktime(sec: edge.sec, nsec: edge.nsec, flags: 0)
                    if edge.assert {
                        state.info.assert_sequence += 1
                        state.info.assert_tu = time
                    } else {
                        state.info.clear_sequence += 1
                        state.info.clear_tu = time
                    }
                }
                data.pointee.info = state.info
            default:
                return nil
            }
            return 0
        }
    }
}

@Suite("/dev/ppsN through the LinuxPPS ioctls")
struct PPSDeviceTests {
    @Test("assert edges come with their realtime timestamps and sequence numbers")
    func assertEdges() throws {
        let source = FakePPSSource {
            $0.script = [(true, 1_700_000_000, 12), (false, 1_700_000_000, 100_000_012), (true, 1_700_000_001, 9)]
        }
        source.past(asserts: 41, clears: 41)
        let mock = source.mock
        let edges = try SeamMock.$current.withValue(mock) {
            let pps = try PPSDevice(path: "/dev/pps0")
            return [try pps.nextEdge(timeout: .seconds(2)), try pps.nextEdge(timeout: .seconds(2)),
                    try pps.nextEdge(timeout: .seconds(2))]
        }
        #expect(edges == [
            EdgeEvent(
                kind: .rising, timestamp: .seconds(1_700_000_000) + .nanoseconds(12), clock: .realtime, sequence: 42),
            EdgeEvent(
                kind: .rising, timestamp: .seconds(1_700_000_001) + .nanoseconds(9), clock: .realtime, sequence: 43),
            nil,
        ])
        // Capture of assert was off, so it was turned on, with timespec timestamps.
        #expect(source.state.withLock { $0.mode } == CInt(PPS_CAPTUREASSERT | PPS_TSFMT_TSPEC))
        #expect(mock.calls.prefix(4) == [
            "open", .ioctl("PPS_GETCAP"), .ioctl("PPS_GETPARAMS"), .ioctl("PPS_SETPARAMS"),
        ])
    }

    @Test("both edges, in time order")
    func bothEdges() throws {
        let source = FakePPSSource { $0.script = [(true, 10, 0), (false, 10, 200_000_000)] }
        let edges = try SeamMock.$current.withValue(source.mock) {
            let pps = try PPSDevice(path: "/dev/pps0", edges: .both)
            return [try pps.nextEdge(timeout: .seconds(1)), try pps.nextEdge(timeout: .seconds(1))]
        }
        #expect(edges.map { $0?.kind } == [.rising, .falling])
        #expect(edges.map { $0?.sequence } == [1, 1])
        #expect(source.state.withLock { $0.mode } & CInt(PPS_CAPTUREBOTH) == CInt(PPS_CAPTUREBOTH))
    }

    @Test("no edge within the time-out is nil, asked for with the right time-out")
    func timeout() throws {
        let source = FakePPSSource()
        let edge = try SeamMock.$current.withValue(source.mock) {
            try PPSDevice(path: "/dev/pps0").nextEdge(timeout: .milliseconds(1500))
        }
        #expect(edge == nil)
        // One zero-time-out fetch at open, one per call to catch an edge between calls, one that waits.
        #expect(source.state.withLock { $0.fetches } == [0, 0, 1_500_000_000])
    }

    @Test("a source already capturing is left alone")
    func alreadyCapturing() throws {
        let source = FakePPSSource { $0.mode = CInt(PPS_CAPTUREBOTH | PPS_TSFMT_TSPEC) }
        let mock = source.mock
        _ = try SeamMock.$current.withValue(mock) { try PPSDevice(path: "/dev/pps0") }
        #expect(mock.count(.ioctl("PPS_SETPARAMS")) == 0)
    }

    @Test("a source that cannot wait, or cannot capture the edge asked for, is unsupported", arguments: [
        CInt(PPS_CAPTUREASSERT), CInt(PPS_CANWAIT | PPS_CAPTURECLEAR),
    ])
    func unsupported(capabilities: CInt) throws {
        let source = FakePPSSource { $0.capabilities = capabilities }
        #expect {
            try SeamMock.$current.withValue(source.mock) { try PPSDevice(path: "/dev/pps0", edges: .rising) }
        } throws: { error in
            if case .unsupported = error as? PPSError { true } else { false }
        }
    }

    @Test("without permission to set parameters, a source already capturing is used as it is")
    func unprivileged() throws {
        let capturing = FakePPSSource {
            $0.mode = CInt(PPS_CAPTUREASSERT)
            $0.setParamsError = .notPermitted
            $0.script = [(true, 5, 0)]
        }
        let edge = try SeamMock.$current.withValue(capturing.mock) {
            try PPSDevice(path: "/dev/pps0").nextEdge(timeout: .seconds(1))
        }
        #expect(edge?.timestamp == .seconds(5))
        let idle = FakePPSSource { $0.setParamsError = .notPermitted }
        #expect {
            try SeamMock.$current.withValue(idle.mock) { try PPSDevice(path: "/dev/pps0") }
        } throws: { error in
            guard case .permissionDenied(let failure) = error as? PPSError else { return false }
            return failure.call == "ioctl(PPS_SETPARAMS)" && failure.device == "/dev/pps0"
        }
    }

    @Test("errors are typed and name the call; EINTR is retried", arguments: [
        ("open", Errno.noSuchFileOrDirectory, "notFound"), ("open", .permissionDenied, "permissionDenied"),
        (.ioctl("PPS_GETCAP"), .notATerminal, "unsupported"), (.ioctl("PPS_FETCH"), .noSuchDevice, "vanished"),
        (.ioctl("PPS_GETPARAMS"), .ioError, "failed"),
    ] as [(SystemCall, Errno, String)])
    func errors(call: SystemCall, errno: Errno, expected: String) throws {
        let source = FakePPSSource { $0.script = [(true, 1, 0)] }
        let mock = source.mock
        mock.fail(call, with: .interrupted, times: 2)
        mock.fail(call, with: errno)
        do {
            _ = try SeamMock.$current.withValue(mock) {
                try PPSDevice(path: "/dev/pps0").nextEdge(timeout: .seconds(1))
            }
            Issue.record("no error")
        } catch {
            let error = try #require(error as? PPSError)
            let name = switch error {
            case .notFound: "notFound"
            case .permissionDenied: "permissionDenied"
            case .unsupported: "unsupported"
            case .vanished: "vanished"
            case .closed: "closed"
            case .failed: "failed"
            }
            #expect(name == expected)
            #expect(error.description.contains("/dev/pps0"))
        }
        #expect(mock.pendingFailures == 0)
    }

    @Test("a real missing device is .notFound")
    func missing() {
        let failure = FailedCall(call: "open", device: "/dev/pps-missing", errno: .noSuchFileOrDirectory)
        #expect(throws: PPSError.notFound(failure)) {
            try PPSDevice(path: "/dev/pps-missing")
        }
    }
}
