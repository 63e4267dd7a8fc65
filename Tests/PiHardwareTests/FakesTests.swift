import GNSSHatTesting
import LinuxSystem
import PiHardware
import Testing

@Suite("GNSSHatTesting fakes behave like the hardware they stand in for")
struct FakesTests {
    let power = GPIOLineAddress(chip: .automatic, line: .name("GPIO17"))
    let pps = GPIOLineAddress(chip: .automatic, line: .offset(18))

    @Test("a fake output records every level, starting with the initial one")
    func output() throws {
        let gpio = FakeGPIO()
        let line = try gpio.output(power, initiallyActive: true, activeLow: true)
        try line.setActive(false)
        try line.setActive(true)
        let fake = try #require(gpio.output(at: power))
        #expect(fake.levels == [true, false, true])
        #expect(fake.physicalLevel == false)
        #expect(gpio.requests == [power])
        fake.release()
        #expect(throws: GPIOError.released(device: power.description)) { try line.setActive(false) }
    }

    @Test("a held fake line is busy and names its holder")
    func busy() throws {
        let gpio = FakeGPIO()
        gpio.hold(pps, consumer: "gpsd")
        #expect {
            try gpio.edges(pps, .rising, activeLow: false, bias: .asIs)
        } throws: { error in
            guard case .busy(_, _, let consumer) = error as? GPIOError else { return false }
            return consumer == "gpsd"
        }
        gpio.free(pps)
        _ = try gpio.edges(pps, .rising, activeLow: false, bias: .asIs)
    }

    @Test("a fake edge source hands out emitted edges it was asked for, in order")
    func edges() throws {
        let gpio = FakeGPIO()
        let source = try gpio.edges(pps, .rising, activeLow: false, bias: .asIs)
        let fake = try #require(gpio.input(at: pps))
        #expect(try source.nextEdge(timeout: .zero) == nil)
        fake.emit(.rising, at: .seconds(1))
        fake.emit(.falling, at: .seconds(1) + .milliseconds(100))
        fake.emit(.rising, at: .seconds(2))
        #expect(try source.nextEdge(timeout: .zero)?.sequence == 1)
        #expect(try source.nextEdge(timeout: .zero)?.timestamp == .seconds(2))
        #expect(try source.nextEdge(timeout: .zero) == nil)
        fake.fail(with: GPIOError.released(device: "x"))
        #expect(throws: GPIOError.self) { try source.nextEdge(timeout: .zero) }
    }

    @Test("a fake edge source waits with no time-out until an edge, a failure or a wake")
    func edgesUntilWoken() throws {
        let gpio = FakeGPIO()
        let source = try gpio.edges(pps, .rising, activeLow: false, bias: .asIs)
        let fake = try #require(gpio.input(at: pps))
        let waker = try Waker()
        fake.emit(.rising, at: .seconds(1))
        fake.emit(.rising, at: .seconds(2))
        #expect(try source.nextEdge(until: waker)?.sequence == 1)
        // The time-out wait and the woken one share the queue.
        #expect(try source.nextEdge(timeout: .zero)?.sequence == 2)
        #expect(try source.nextEdge(timeout: .zero) == nil)
        waker.wake()
        #expect(try source.nextEdge(until: waker) == nil)
        let woken = try onThread({ try source.nextEdge(until: waker) }, meanwhile: { fake.emit(.rising, at: .seconds(3)) })
        #expect(woken?.sequence == 3)
        fake.fail(with: GPIOError.released(device: "x"))
        #expect(throws: GPIOError.released(device: "x")) { try source.nextEdge(until: waker) }
        #expect(fake.pendingCount == 0)
        #expect(fake.timedWaits == 2)
    }

    @Test("a fake byte link passes bytes both ways, answers writes, and hangs up like a tty")
    func byteLink() throws {
        let link = FakeByteLink()
        link.onWrite { bytes in bytes == [0xB5, 0x62] ? [0x05, 0x01] : [] }
        link.feed([1, 2, 3])
        #expect(try link.read(maxCount: 2, timeout: .zero) == [1, 2])
        try link.write([0xB5, 0x62])
        #expect(try link.read(maxCount: 10, timeout: .zero) == [3, 0x05, 0x01])
        #expect(try link.read(maxCount: 10, timeout: .zero) == [])
        #expect(link.written == [[0xB5, 0x62]])
        link.feed([9])
        link.hangUp()
        #expect(try link.read(maxCount: 10, timeout: .zero) == [9])
        #expect {
            try link.read(maxCount: 10, timeout: .zero)
        } throws: { error in
            (error as? SerialError)?.deviceIsGone == true
        }
        link.close()
        #expect(link.isClosed)
    }
}
