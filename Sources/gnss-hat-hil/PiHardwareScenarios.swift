// The real PiHardware drivers against the simulated hat in the guest kernel: GPIO outputs and
// the busy error through libgpiod (v1 or v2, as built), PPS edges with kernel timestamps, the
// u-blox DDC port (GNSSHat's) through I2C_RDWR with the receiver's glitches and NAKs, and termios
// on a pseudo-terminal (LinuxSystem's). Levels and bytes are checked from outside, through
// GPIOSimBank and DDCSimModule.
// Glibc: `clock_gettime` of both clocks, read apart from the code under test to check its edge times.
import Glibc
import GNSSHat  // UBloxDDC
import LinuxSystem
import PiHardware

/// The simulated hat's GPIO chip, by the label gnss_gpio_sim gives it.
let simulatedChip = GPIOChipSelector.label("gnss-hat-sim")

let piHardwareScenarios: [Scenario] = [
    Scenario("pihw.library") { try checkPiHardwareLibrary() },
    Scenario("pihw.output-lines") { try checkOutputLines() },
    Scenario("pihw.busy-line") { try checkBusyLine() },
    Scenario("pihw.pps-edges") { try checkEdges(clock: .monotonic) },
    Scenario("pihw.pps-realtime") { try checkRealtimeEdges() },
    Scenario("pihw.pps-until-woken") { try checkEdgesUntilWoken() },
    Scenario("pihw.ddc-stream") { try checkDDCStream() },
    Scenario("pihw.ddc-glitches") { try checkDDCGlitches() },
    Scenario("pihw.ddc-nak") { try checkDDCNAK() },
    Scenario("pihw.pty-serial") { try checkPseudoTerminalSerial() },
]

/// The time on `clock` now (`clock_gettime`), on the epoch of edge timestamps.
func now(_ clock: EdgeClock) -> Duration {
    var spec = timespec()
    clock_gettime(clock == .realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC, &spec)
    return .seconds(spec.tv_sec) + .nanoseconds(spec.tv_nsec)
}

/// PiHardware runs with the libgpiod API it was built for, and lists the simulated chip.
func checkPiHardwareLibrary() throws {
    #if GNSSHAT_GPIOD_V2
    let expected = 2
    #else
    let expected = 1
    #endif
    try expect(GPIOChip.apiMajorVersion == expected, "PiHardware built for API \(GPIOChip.apiMajorVersion)")
    try expect(GPIOChip.libraryVersion.hasPrefix("\(expected)."), "libgpiod \(GPIOChip.libraryVersion) at run time")
    let chips = try GPIOChip.list()
    try expect(chips.contains { $0.label == "gnss-hat-sim" && $0.lineCount == 6 }, "GPIOChip.list(): \(chips)")
}

/// Outputs drive the physical level (active-low inverted by the kernel) and fall back to
/// their pull when released.
func checkOutputLines() throws {
    let lines = try GPIOSimBank()
    let chip = try GPIOChip.open(simulatedChip)
    defer { chip.close() }

    let power = try chip.requestOutput(.name("GNSS_PWR_EN"), initiallyActive: true)
    try expect(try lines.waitForLevel(of: "GNSS_PWR_EN", true, timeoutMilliseconds: 5000),
               "GNSS_PWR_EN is low after a request driven active")
    let info = try chip.lineInfo(.name("GNSS_PWR_EN"))
    try expect(info.isUsed && info.consumer == GPIOChip.defaultConsumer, "line info \(info)")
    try power.setActive(false)
    try expect(try lines.waitForLevel(of: "GNSS_PWR_EN", false, timeoutMilliseconds: 5000),
               "GNSS_PWR_EN stays high after setActive(false)")
    try power.setActive(true)
    try expect(try lines.waitForLevel(of: "GNSS_PWR_EN", true, timeoutMilliseconds: 5000),
               "GNSS_PWR_EN stays low after setActive(true)")
    power.release()
    try expect(try lines.waitForLevel(of: "GNSS_PWR_EN", false, timeoutMilliseconds: 5000),
               "GNSS_PWR_EN did not fall back to its pull-down after the release")

    let reset = try chip.requestOutput(.name("GNSS_RESET_N"), initiallyActive: true, activeLow: true)
    try expect(try lines.waitForLevel(of: "GNSS_RESET_N", false, timeoutMilliseconds: 5000),
               "an asserted active-low reset is not physically low")
    try expect(try reset.isActive(), "the asserted reset reads back inactive")
    try reset.setActive(false)
    try expect(try lines.waitForLevel(of: "GNSS_RESET_N", true, timeoutMilliseconds: 5000),
               "a released active-low reset is not physically high")
    reset.release()
    try expect(try lines.level(of: "GNSS_RESET_N"), "GNSS_RESET_N left its pull-up after the release")
}

/// A line held by another consumer gives the typed busy error naming the holder, and the
/// failed request drives nothing.
func checkBusyLine() throws {
    let lines = try GPIOSimBank()
    let chip = try GPIOChip.open(simulatedChip)
    defer { chip.close() }
    let holder = try chip.requestOutput(.name("GNSS_PWR_EN"), initiallyActive: false, consumer: "other-holder")
    defer { holder.release() }
    do {
        let second = try chip.requestOutput(.name("GNSS_PWR_EN"), initiallyActive: true)
        second.release()
        throw ScenarioFailure("a second request of a held line succeeded")
    } catch let error as GPIOError {
        guard case .busy(_, _, let consumer) = error else {
            throw ScenarioFailure("a held line failed with \(error), expected busy")
        }
        try expect(consumer == "other-holder", "busy names the holder \(consumer ?? "nil")")
    }
    try expect(try !lines.level(of: "GNSS_PWR_EN"), "the failed request powered GNSS_PWR_EN")
}

/// PPS pulses driven from outside arrive as rising and falling edges, in order, numbered
/// one after the other, each stamped by the kernel between the write that made it and the
/// write's return.
func checkEdges(clock: EdgeClock) throws {
    let lines = try GPIOSimBank()
    try lines.setPull(of: "GNSS_PPS", high: false)
    let chip = try GPIOChip.open(simulatedChip)
    defer { chip.close() }
    let pps = try chip.requestInput(.name("GNSS_PPS"), edges: .both, clock: clock)
    defer { pps.release() }
    var previous: EdgeEvent?
    for pulse in 1...3 {
        for high in [true, false] {
            let before = now(clock)
            try lines.setPull(of: "GNSS_PPS", high: high)
            let after = now(clock)
            // Waiting for each edge before the next change keeps rising and falling apart:
            // gpiolib reads the level to tell them, in its interrupt thread.
            guard let edge = try pps.nextEdge(timeout: .seconds(5)) else {
                throw ScenarioFailure("no \(high ? "rising" : "falling") edge in pulse \(pulse)")
            }
            try expect(edge.kind == (high ? .rising : .falling), "pulse \(pulse): \(edge)")
            try expect(edge.clock == clock, "edge clock \(edge.clock), asked for \(clock)")
            try expect(edge.timestamp >= before && edge.timestamp <= after,
                       "\(edge) is outside the write that made it, \(before)...\(after)")
            if let previous {
                try expect(edge.sequence == previous.sequence + 1, "\(edge) follows \(previous)")
            }
            previous = edge
        }
    }
    try expect(try pps.nextEdge(timeout: .zero) == nil, "an edge nobody made")
}

/// The wait with no time-out, `poll` on the line's event descriptor beside a waker: an edge made
/// before the wait or during it (from this thread, while another waits) ends it with that edge,
/// a wake from here ends it with none. A wait that missed either would hang the scenario.
func checkEdgesUntilWoken() throws {
    let lines = try GPIOSimBank()
    try lines.setPull(of: "GNSS_PPS", high: false)
    let chip = try GPIOChip.open(simulatedChip)
    defer { chip.close() }
    let pps = try chip.requestInput(.name("GNSS_PPS"), edges: .rising)
    defer { pps.release() }
    let waker = try Waker()
    try lines.setPull(of: "GNSS_PPS", high: true)
    guard let first = try pps.nextEdge(until: waker) else { throw ScenarioFailure("woken with no wake") }
    try expect(first.kind == .rising, "first edge \(first)")
    try lines.setPull(of: "GNSS_PPS", high: false)

    /// Waits on a thread of its own while `meanwhile` runs here; what the wait returned.
    func waitElsewhere(meanwhile: () throws -> Void) throws -> EdgeEvent? {
        let result = Shared<Result<EdgeEvent?, GPIOError>?>(nil)
        let thread = try LoopThread(name: "hil-pps-wait") {
            let outcome = Result { () throws(GPIOError) -> EdgeEvent? in try pps.nextEdge(until: waker) }
            result.withLock { $0 = outcome }
        }
        try meanwhile()
        thread.join()
        guard let outcome = result.withLock({ $0 }) else { throw ScenarioFailure("the wait left no result") }
        return try outcome.get()
    }

    let woken = try waitElsewhere { waker.wake() }
    try expect(woken == nil, "woken, yet \(String(describing: woken))")
    let arrived = try waitElsewhere { try lines.setPull(of: "GNSS_PPS", high: true) }
    try expect(arrived?.kind == .rising, "an edge made during the wait gave \(String(describing: arrived))")
    try expect(try pps.nextEdge(timeout: .zero) == nil, "an edge nobody made")
}

/// Realtime edge timestamps: supported with libgpiod v2, a typed `unsupported` error with v1.
func checkRealtimeEdges() throws {
    #if GNSSHAT_GPIOD_V2
    try checkEdges(clock: .realtime)
    #else
    let chip = try GPIOChip.open(simulatedChip)
    defer { chip.close() }
    do {
        let line = try chip.requestInput(.name("GNSS_PPS"), edges: .rising, clock: .realtime)
        line.release()
        throw ScenarioFailure("libgpiod v1 accepted realtime edge timestamps")
    } catch let error as GPIOError {
        guard case .unsupported = error else {
            throw ScenarioFailure("realtime timestamps on v1 failed with \(error), expected unsupported")
        }
    }
    #endif
}

/// The DDC port reads the count and then the stream in chunks through I2C_RDWR, and its
/// writes reach the receiver in transfers of at least two bytes.
func checkDDCStream() throws {
    let ddc = DDCSimModule()
    try ddc.reset()
    let fed = (0..<600).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    try ddc.feed(fed)
    let port = UBloxDDC(bus: try I2CAdapter(path: try DDCSimModule.busPath()), maxReadChunk: 256)
    try expect(try port.bytesAvailable() == 600, "bytesAvailable is not 600")
    var received: [UInt8] = []
    for _ in 0..<10 where received.count < fed.count {
        received += try port.readAvailable()
    }
    try expect(received == fed, "read \(received.count) bytes that differ from the 600 fed")
    try expect(try port.readAvailable().isEmpty, "bytes after the stream was drained")
    try expect(port.glitches.cappedCounts == 2, "capped counts \(port.glitches.cappedCounts), expected 2")

    // 257 bytes in chunks of at most 256 must not leave a 1-byte tail (which would only set
    // the register): the receiver gets all of them.
    let message = (0..<257).map { UInt8(truncatingIfNeeded: $0) }
    try port.write(message)
    try expect(try ddc.hostBytes() == message, "the receiver did not get the 257-byte message whole")
    try expect(try ddc.stats()["host_bytes"] == 257, "host_bytes is not 257")
}

/// The receiver's glitches reach PiHardware as u-blox parts make them: bit 15 of the count is
/// masked, a bogus 32767 is capped, a bogus 127 over an empty buffer reads as nothing, and a
/// 0xFF inside a frame is passed on for the framer to resync.
func checkDDCGlitches() throws {
    let ddc = DDCSimModule()
    try ddc.reset()
    let port = UBloxDDC(bus: try I2CAdapter(path: try DDCSimModule.busPath()))
    try ddc.feed(navStatusPoll)

    try ddc.queueBogusCounts(["bit15"])
    try expect(try port.bytesAvailable() == navStatusPoll.count, "bit 15 was not masked")
    try expect(port.glitches.bit15Set == 1, "bit15Set \(port.glitches.bit15Set)")

    try ddc.queueBogusCounts(["32767"])
    let capped = try port.readAvailable()
    try expect(capped.count == port.maxReadChunk, "a count of 32767 read \(capped.count) bytes")
    try expect(Array(capped.prefix(navStatusPoll.count)) == navStatusPoll, "the frame is not first in the chunk")
    try expect(capped.dropFirst(navStatusPoll.count).allSatisfy { $0 == 0xFF }, "the fill after it is not 0xFF")
    try expect(port.glitches.cappedCounts == 1, "cappedCounts \(port.glitches.cappedCounts)")

    try ddc.feed(navStatusPoll)
    try ddc.insertFF(after: 3)
    let withFF = try port.readAvailable()
    try expect(withFF == Array(navStatusPoll[0..<3]) + [0xFF] + Array(navStatusPoll[3..<7]), "read \(withFF)")
    try expect(try port.readAvailable() == [navStatusPoll[7]], "the frame's last byte was lost")

    try ddc.queueBogusCounts(["127"])
    try expect(try port.readAvailable().isEmpty, "127 bytes of idle 0xFF were not empty")
    try expect(port.glitches.emptyChunks == 1, "emptyChunks \(port.glitches.emptyChunks)")
}

/// NAKs reach PiHardware as the typed `nak` error (EREMOTEIO, as on a Pi), also for an address
/// nobody answers, and the port works again after them.
func checkDDCNAK() throws {
    let ddc = DDCSimModule()
    try ddc.reset()
    let bus = try I2CAdapter(path: try DDCSimModule.busPath())
    let port = UBloxDDC(bus: bus)
    try ddc.nakNext(2)
    for attempt in 1...2 {
        do {
            _ = try port.bytesAvailable()
            throw ScenarioFailure("NAKed transfer \(attempt) succeeded")
        } catch let error as I2CError {
            guard case .nak = error else { throw ScenarioFailure("a NAK failed with \(error), expected nak") }
        }
    }
    try expect(try port.bytesAvailable() == 0, "the port does not work after the NAKs")
    do {
        _ = try UBloxDDC(bus: bus, address: 0x43).bytesAvailable()
        throw ScenarioFailure("a transfer to 0x43 succeeded")
    } catch let error as I2CError {
        guard case .nak = error else { throw ScenarioFailure("an absent address failed with \(error)") }
    }
}

/// A serial port opened on a pseudo-terminal in the guest: termios speeds, raw bytes both ways.
func checkPseudoTerminalSerial() throws {
    let pty = try PseudoTerminal()
    defer { pty.close() }
    let port = try SerialPort(path: pty.devicePath, speed: 9600)
    defer { port.close() }
    let initial = try port.speed()
    try expect(initial == 9600, "speed \(initial), expected 9600")
    try port.setSpeed(115_200)
    let changed = try port.speed()
    try expect(changed == 115_200, "speed \(changed), expected 115200")

    let toHost = Array("$GNGGA,,,,,,0,00,99.99,,,,,,*56\r\n".utf8) + navStatusPoll
    try pty.write(toHost)
    var received: [UInt8] = []
    for _ in 0..<20 where received.count < toHost.count {
        received += try port.read(maxCount: 4096, timeout: .seconds(5))
    }
    try expect(received == toHost, "the port read \(received.count) bytes that differ")

    try port.write(navStatusPoll)
    var sent: [UInt8] = []
    for _ in 0..<20 where sent.count < navStatusPoll.count {
        sent += try pty.read(maxCount: 4096, timeout: .seconds(5))
    }
    try expect(sent == navStatusPoll, "the pseudo-terminal read \(sent)")
}
