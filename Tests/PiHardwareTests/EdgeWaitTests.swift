import Glibc
import GNSSHatTesting  // onThread
import LinuxSystem
@testable import PiHardware
import Testing

/// An edge source that only has `nextEdge(timeout:)`, playing a script: each call takes the next
/// step (nothing, an edge, a wake of `waker`), so the default `nextEdge(until:)` runs on one
/// thread with no waiting.
private final class ScriptedEdges: EdgeEventSource {
    enum Step: Sendable {
        case nothing
        case edge(EdgeEvent)
        /// Wakes the waker, then returns nothing.
        case wake
        /// Wakes the waker, then returns an edge.
        case wakeAndEdge(EdgeEvent)
    }

    let name = "scripted"
    let waker: Waker
    private let state: Lock<(steps: [Step], timeouts: [Duration])>

    init(_ steps: [Step], waker: Waker) {
        self.waker = waker
        state = Lock((steps, []))
    }

    var timeouts: [Duration] { state.withLock { $0.timeouts } }

    func nextEdge(timeout: Duration) throws -> EdgeEvent? {
        let step = state.withLock { state -> Step in
            state.timeouts.append(timeout)
            return state.steps.isEmpty ? .nothing : state.steps.removeFirst()
        }
        switch step {
        case .nothing: return nil
        case .edge(let edge): return edge
        case .wake:
            waker.wake()
            return nil
        case .wakeAndEdge(let edge):
            waker.wake()
            return edge
        }
    }
}

@Suite("Waiting for an edge until woken", .timeLimit(.minutes(1)))
struct EdgeWaitTests {
    static func edge(_ sequence: UInt64) -> EdgeEvent {
        EdgeEvent(kind: .rising, timestamp: .seconds(Int64(sequence)), clock: .monotonic, sequence: sequence)
    }

    @Test("the default waits in 50 ms steps and returns nil once woken")
    func defaultWoken() throws {
        let waker = try Waker()
        let source = ScriptedEdges([.nothing, .nothing, .wake, .edge(Self.edge(1))], waker: waker)
        #expect(try source.nextEdge(until: waker) == nil)
        #expect(source.timeouts == Array(repeating: .milliseconds(50), count: 3))
        #expect(try source.nextEdge(until: waker) == Self.edge(1))
    }

    @Test("the default returns an edge as it comes; a wake that came with it ends the next wait")
    func defaultEdge() throws {
        let waker = try Waker()
        let source = ScriptedEdges([.nothing, .edge(Self.edge(1)), .wakeAndEdge(Self.edge(2))], waker: waker)
        #expect(try source.nextEdge(until: waker) == Self.edge(1))
        #expect(source.timeouts.count == 2)
        #expect(try source.nextEdge(until: waker) == Self.edge(2))
        #expect(try source.nextEdge(until: waker) == nil)
        #expect(source.timeouts.count == 4)
        // A wake while nobody waits is used up by the next wait, not kept for later.
        waker.wake()
        #expect(try source.nextEdge(until: waker) == nil)
        #expect(!waker.takeWake())
    }

    @Test("a GPIO line waits on its event descriptor: queued edges in order, nil once woken")
    func gpioLine() throws {
        let driver = pi4()
        let chip = try GPIOChip.open(.automatic, driver: driver)
        let line = try chip.requestInput(.offset(18), edges: .both)
        let waker = try Waker()
        let events = (1...3).map { Self.edge(UInt64($0)) }
        driver.queue("/dev/gpiochip0", 18, events)
        // The fake driver reads two at a time: the third needs a second poll and read.
        #expect(try (0..<3).map { _ in try line.nextEdge(until: waker) } == events)
        waker.wake()
        #expect(try line.nextEdge(until: waker) == nil)
        let woken = try onThread({ try line.nextEdge(until: waker) }, meanwhile: { waker.wake() })
        #expect(woken == nil)
        let arrived = try onThread({ try line.nextEdge(until: waker) }, meanwhile: {
            driver.queue("/dev/gpiochip0", 18, [Self.edge(4)])
        })
        #expect(arrived == Self.edge(4))
        line.release()
        #expect(throws: GPIOError.released(device: line.name)) { try line.nextEdge(until: waker) }
    }

    @Test("a GPIO line whose event descriptor cannot be had says which call failed")
    func gpioDescriptorFails() throws {
        let chip = try GPIOChip.open(.automatic, driver: pi4())
        let line = try chip.requestInput(.offset(18), edges: .rising)
        let mock = SeamMock()
        mock.fail("gpiod_line_request_get_fd", with: .ioError)
        #expect {
            try SeamMock.$current.withValue(mock) { try line.nextEdge(until: try Waker()) }
        } throws: { error in
            guard case .failed(let failure)? = error as? GPIOError else { return false }
            return failure.call == "gpiod_line_request_get_fd" && failure.errno == .ioError
        }
    }
}
