// ReadinessWaiter: a descriptor's readiness, a wake from another thread, or a time-out, in one poll.
import Glibc
import GNSSHatTesting  // onThread
import LinuxSystem
import Testing

@Suite("Waiting for a descriptor or a wake", .timeLimit(.minutes(1)))
struct ReadinessWaiterTests {
    @Test("readable, writable, hung up, or nothing within the time-out")
    func readiness() throws {
        let waiter = try ReadinessWaiter()
        var fds: [CInt] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        #expect(waiter.wait(descriptor: fds[0], forWriting: false, timeout: .zero) == DescriptorReadiness())
        #expect(waiter.wait(descriptor: fds[1], forWriting: true, timeout: nil) == DescriptorReadiness(writable: true))
        // Readable only when asked: a pipe's write end is never readable.
        #expect(waiter.wait(descriptor: fds[1], forWriting: false, timeout: .zero) == DescriptorReadiness())
        #expect(write(fds[1], "x", 1) == 1)
        #expect(waiter.wait(descriptor: fds[0], forWriting: false, timeout: nil) == DescriptorReadiness(readable: true))
        close(fds[1])
        var byte: UInt8 = 0
        #expect(read(fds[0], &byte, 1) == 1)
        #expect(waiter.wait(descriptor: fds[0], forWriting: false, timeout: nil) == DescriptorReadiness(failed: true))
    }

    @Test("a wake before the wait ends it at once, from another thread during it, and only once")
    func wakes() throws {
        let waiter = try ReadinessWaiter()
        waiter.wake()
        #expect(waiter.wait(descriptor: nil, forWriting: false, timeout: nil) == DescriptorReadiness())
        // Consumed: the next wait runs into its time-out.
        let start = ContinuousClock.now
        _ = waiter.wait(descriptor: nil, forWriting: false, timeout: .milliseconds(30))
        #expect(ContinuousClock.now - start >= .milliseconds(30))
        let woken = try onThread({ waiter.wait(descriptor: nil, forWriting: false, timeout: nil) }, meanwhile: {
            waiter.wake()
        })
        #expect(woken == DescriptorReadiness())
    }

    @Test("a signal (EINTR) or a failed poll ends the wait early with nothing ready, on the waiter's thread too")
    func interrupted() throws {
        let mock = SeamMock()
        let waiter = try SeamMock.$current.withValue(mock) { try ReadinessWaiter() }
        mock.fail("poll", with: .interrupted)
        mock.fail("poll", with: .noMemory)
        let results = try onThread({
            [waiter.wait(descriptor: nil, forWriting: false, timeout: nil),
             waiter.wait(descriptor: nil, forWriting: false, timeout: nil)]
        }, meanwhile: {})
        #expect(results == [DescriptorReadiness(), DescriptorReadiness()])
        #expect(mock.pendingFailures == 0)
    }
}
