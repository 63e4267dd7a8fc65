@testable import GNSSHatSimulator
import GNSSHatTesting  // onThread
import LinuxSystem
import PiHardware
import Testing

private struct Broken: Error, Equatable {}

private func edge(_ sequence: UInt64) -> EdgeEvent {
    EdgeEvent(kind: .rising, timestamp: .seconds(Int64(sequence)), clock: .monotonic, sequence: sequence)
}

/// The queue behind the simulator's PPS line and `FakeEdgeSource`, with its eventfd and in the
/// steps it waits in when it has none.
@Suite("An in-process edge queue: both waits, failures first, woken waits counted", .timeLimit(.minutes(1)))
struct EdgeQueueTests {
    @Test("queued edges come out in order to either wait; a failure comes before them", arguments: [true, false])
    func order(eventfd: Bool) throws {
        let queue = EdgeQueue(eventfd: eventfd)
        let waker = try Waker()
        #expect(try queue.next(timeout: .zero) == nil)
        queue.push(edge(1))
        queue.push(edge(2))
        queue.push(edge(3))
        #expect(queue.pendingCount == 3)
        #expect(try queue.next(until: waker)?.sequence == 1)
        #expect(try queue.next(timeout: .zero)?.sequence == 2)
        queue.fail(with: Broken())
        #expect(throws: Broken()) { try queue.next(until: waker) }
        #expect(try queue.next(until: waker)?.sequence == 3)
        queue.fail(with: Broken())
        #expect(throws: Broken()) { try queue.next(timeout: .zero) }
        #expect(try queue.next(timeout: .zero) == nil)
        #expect(queue.pendingCount == 0)
        #expect(queue.wokenWaits == 0)
    }

    @Test("a wait with no time-out ends woken (counted), with an edge or with a failure from another thread",
          arguments: [true, false])
    func untilWoken(eventfd: Bool) throws {
        let queue = EdgeQueue(eventfd: eventfd)
        let waker = try Waker()
        // A wake that came while nobody waited ends the next wait.
        waker.wake()
        #expect(try queue.next(until: waker) == nil)
        #expect(queue.wokenWaits == 1)
        #expect(try onThread({ try queue.next(until: waker) }, meanwhile: { waker.wake() }) == nil)
        #expect(queue.wokenWaits == 2)
        #expect(try onThread({ try queue.next(until: waker) }, meanwhile: { queue.push(edge(7)) })?.sequence == 7)
        #expect(throws: Broken()) {
            try onThread({ try queue.next(until: waker) }, meanwhile: { queue.fail(with: Broken()) })
        }
        #expect(queue.wokenWaits == 2)
        // With an eventfd the wait never times out; without one it waits in timed steps.
        #expect((queue.timedWaits == 0) == eventfd)
    }

    @Test("an edge queued before a wake wins over it; the wake ends the next wait", arguments: [true, false])
    func edgeBeforeWake(eventfd: Bool) throws {
        let queue = EdgeQueue(eventfd: eventfd)
        let waker = try Waker()
        queue.push(edge(1))
        waker.wake()
        #expect(try queue.next(until: waker)?.sequence == 1)
        #expect(try queue.next(until: waker) == nil)
    }
}
