import Glibc
import GNSSHatTesting  // onThread
@testable import LinuxSystem
import Testing

/// What `DescriptorIO.waitForInput` saw, as text a test can compare.
private func readiness(_ fd: CInt, timeout: Duration?, wake: Waker?) -> String {
    switch DescriptorIO.waitForInput(fd, device: "test", timeout: timeout, wake: wake) {
    case .readable: "readable"
    case .woken: "woken"
    case .timedOut: "timedOut"
    case .hungUp: "hungUp"
    case .failed(let failure): "failed \(failure)"
    }
}

@Suite("Waiting for input beside a waker: one poll, pollfds on the stack", .timeLimit(.minutes(1)))
struct InputWaitTests {
    @Test("input, a wake, both, neither: input wins and the wake ends the next wait")
    func outcomes() throws {
        // An eventfd stands in for the device: readable once woken, until drained.
        let device = try Waker()
        let wake = try Waker()
        #expect(readiness(device.rawDescriptor, timeout: .zero, wake: wake) == "timedOut")
        #expect(readiness(device.rawDescriptor, timeout: .zero, wake: nil) == "timedOut")
        device.wake()
        #expect(readiness(device.rawDescriptor, timeout: nil, wake: nil) == "readable")
        wake.wake()
        #expect(readiness(device.rawDescriptor, timeout: nil, wake: wake) == "readable")
        device.drain()
        #expect(readiness(device.rawDescriptor, timeout: nil, wake: wake) == "woken")
        // The wait drained the wake: the next one sees nothing.
        #expect(readiness(device.rawDescriptor, timeout: .zero, wake: wake) == "timedOut")
    }

    @Test("a descriptor that is not open is a typed failure (EBADF), with or without a waker")
    func notOpen() throws {
        // No process has this many descriptors: poll reports it with POLLNVAL at once.
        let notOpen = CInt.max
        let alone = readiness(notOpen, timeout: .zero, wake: nil)
        #expect(alone.hasPrefix("failed") && alone.contains("EBADF"), "\(alone)")
        let beside = readiness(notOpen, timeout: nil, wake: try Waker())
        #expect(beside.hasPrefix("failed") && beside.contains("EBADF"), "\(beside)")
    }

    @Test("a wait with no time-out ends when woken from another thread, or when input comes")
    func wokenFromAnotherThread() throws {
        let device = try Waker()
        let wake = try Waker()
        let fd = device.rawDescriptor
        let woken = try onThread({ readiness(fd, timeout: nil, wake: wake) }, meanwhile: { wake.wake() })
        #expect(woken == "woken")
        let input = try onThread({ readiness(fd, timeout: nil, wake: wake) }, meanwhile: { device.wake() })
        #expect(input == "readable")
    }

    @Test("a pipe whose writer is gone has hung up")
    func hungUp() throws {
        var fds: [CInt] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        close(fds[1])
        #expect(readiness(fds[0], timeout: nil, wake: try Waker()) == "hungUp")
    }

    @Test("Waker.wait(until:) says which waker it saw, and its own wins")
    func wakerUntilWaker() throws {
        let ready = try Waker()
        let wake = try Waker()
        ready.wake()
        #expect(try ready.wait(until: wake))
        wake.wake()
        #expect(try !ready.wait(until: wake))
        ready.wake()
        wake.wake()
        #expect(try ready.wait(until: wake))
        #expect(wake.takeWake())
        #expect(!wake.takeWake())
        #expect(try onThread({ try ready.wait(until: wake) }, meanwhile: { wake.wake() }) == false)
    }
}
