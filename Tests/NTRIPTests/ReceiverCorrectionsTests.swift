// End to end: a Receiver on the simulator-rtk board takes RTK corrections from RTKLIB's str2str through the
// NTRIP client, only while a subscriber asks for centimetres. The caster is fed our encoder's station
// message and MSM4 at every epoch; the simulated F9 goes to RTK fixed; when the 2 cm subscriber leaves, the
// connection stays for the client's linger and is then closed, as the caster's side of the socket shows.
import Foundation
import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import NTRIP
import Signals
import Testing
import TestSupport

@Suite("A Receiver's corrections from str2str")
struct ReceiverCorrectionsTests {
    static let station = 2003

    @Test("corrections flow only while a 2 cm subscriber is present; RTK fixed; socket closed after the linger",
          .timeLimit(.minutes(2)))
    func onDemand() async throws {
        let port = try freeLoopbackPort()
        let caster = try await startStr2str(port: port)
        defer { caster.stop() }
        let board = try #require(try BoardCatalog.builtIn("simulator-rtk"))
        let clock = ManualClock()
        let hat = try SimulatedHat(board: board, clock: clock, lines: FakeGPIO(), connection: .pseudoTerminal,
                                   timing: .driven)
        let receiver = Receiver(on: hat, options: ReceiverOptions())
        let inFlight = FramesInFlight()
        let driver = HatDriver(hat: hat, clock: clock, receiver: receiver, alsoWaitingFor: [inFlight])
        // The client's timers (its 5 s linger) run on the rig's manual clock, moved by this test.
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(port)/MOUNT", version: .v1, linger: .seconds(5))
        // The client's frames, counted as they arrive; when the Receiver lets go, frames still on their way are
        // no longer waited for (nobody takes them).
        let upstream = Lock<SignalToken?>(nil)
        receiver.useCorrections(RefCountedSignal(configuration: SignalConfiguration(replay: .none), clock: clock) {
            emitter in
            inFlight.accept(true)
            let token = rig.client.corrections.subscribe(onValue: { frame in
                inFlight.arrived()
                emitter.send(frame.frame)
            })
            upstream.withLock { $0 = token }
        } stop: {
            upstream.withLock { token in
                defer { token = nil }
                return token
            }?.cancel()
            inFlight.accept(false)
        })

        // A subscriber asking no accuracy: fixes, and no connection to the caster.
        let coarse = receiver.fixes.subscribe()
        _ = try await driver.run { () async throws -> Fix in
            for try await fix in coarse where fix.mode == .threeD { return fix }
            throw CancellationError()
        }
        #expect(receiver.corrections.notWantedBecause == .demandNeedsNoRTK)
        #expect(try establishedConnections(port: port) == 0)

        // A 2 cm subscriber: the corrections are subscribed, the client connects.
        let fine = receiver.fixes(every: .seconds(1), accuracy: 0.02).subscribe(buffering: .bounded(4))
        try await driver.run { await receiver.waitForCorrections { $0.subscribed } }
        try await rig.waitForStreaming()
        #expect(try establishedConnections(port: port) == 1)

        // Our encoder's 1005 and a GPS MSM4 to the caster at every epoch, until the 2 cm fix.
        let since = clock.now
        let fixed = try await driver.run(limit: .seconds(120)) { () async throws -> Fix in
            let feeder = Task {
                for try await fix in receiver.fixes.subscribe() where fix.hasPosition {
                    let frames = Self.epochFrames(fix)
                    inFlight.sent(frames.count)
                    try caster.write(frames.flatMap { $0 })
                }
            }
            defer { feeder.cancel() }
            for try await fix in fine where fix.hasPosition { return fix }
            throw CancellationError()
        }
        let toFixed = since.duration(to: clock.now)
        #expect(fixed.status == .rtkFixed && fixed.carrierSolution == .fixed)
        #expect(try #require(fixed.eph) <= 0.02)
        #expect(fixed.referenceStation == Self.station)
        #expect(toFixed >= .seconds(30) && toFixed <= .seconds(45), "\(toFixed)")
        let status = receiver.corrections
        #expect(status.confirmedUsed > 0 && status.confirmedCRCFailed == 0, "\(status)")
        print("str2str -> NTRIP -> simulator-rtk: RTK fixed \(toFixed) after subscribing; \(status)")

        // The 2 cm subscriber leaves: unsubscribed at once; the socket stays for the 5 s linger, then closes.
        fine.cancel()
        try await driver.run { await receiver.waitForCorrections { !$0.subscribed } }
        #expect(receiver.corrections.notWantedBecause == .demandNeedsNoRTK)
        // The client's signal lingers from now on (its deadline is set as it enters the state).
        for await state in rig.client.corrections.stateChanges() where state == .lingering { break }
        rig.clock.advance(by: .milliseconds(4900))
        #expect(rig.client.corrections.state == .lingering)
        #expect(try establishedConnections(port: port) == 1)
        rig.clock.advance(by: .milliseconds(100))
        // The client's stop runs (the socket closed, its end awaited): the caster's side is no longer established.
        for await state in rig.client.corrections.stateChanges() where state == .idle { break }
        try await rig.reports.line(containing: "disconnected from")
        #expect(try establishedConnections(port: port) == 0)
        #expect(rig.client.corrections.statistics.starts == 1, "one connection for the one 2 cm subscriber")

        coarse.cancel()
        _ = try? await driver.run { await receiver.shutdown() }
        await hat.shutdown()
        await rig.client.shutdown()
    }

    @Test("gnss-hat ntrip sources: str2str's sourcetable, and with --near the distance to each stream")
    func sources() async throws {
        let port = try freeLoopbackPort()
        let caster = try await startStr2str(port: port)
        defer { caster.stop() }
        let directory = try TestPaths.temporaryDirectory()
        let password = directory.appendingPathComponent("password").path
        try "secret\n".write(toFile: password, atomically: true, encoding: .utf8)
        let url = "ntrip://rover@127.0.0.1:\(port)"
        var result = try CommandRun.run(["ntrip", "sources", url, "--ntrip-password-file", password])
        // str2str may refuse a connect that comes before it listens, as ClientRig says: one more try then.
        if result.status != 0 && result.err.contains("refused") {
            result = try CommandRun.run(["ntrip", "sources", url, "--ntrip-password-file", password])
        }
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out == "MOUNT  Berlin  RTCM 3.3  GPS+GLO  DEU  52.52,13.40\n")
        let near = try CommandRun.run(["ntrip", "sources", url, "--ntrip-password-file", password,
                                       "--near", "52.40,13.10"])
        #expect(near.out == "MOUNT  Berlin  RTCM 3.3  GPS+GLO  DEU  52.52,13.40  24.3 km\n", "\(near.err)")
    }

    /// The frames of one epoch of a base near the simulator: 1005, then a GPS MSM4 of six satellites.
    static func epochFrames(_ fix: Fix) -> [[UInt8]] {
        let arp = RTCM3StationARP(stationID: station, x: 3_980_581, y: -100, z: 4_966_825)
        let cells = [2, 5, 12, 15, 24, 29].map { RTCM3MSM.Cell(satellite: $0, signal: 2) }
        let milliseconds = (fix.time?.timeOfDay.nanosecondsSinceMidnight ?? 0) / 1_000_000
        let msm = RTCM3MSM(messageNumber: 1074, stationID: station, epochTime: UInt32(clamping: milliseconds),
                           cells: cells)
        return [arp.frame, msm.frame]
    }
}

/// Established TCP connections whose local port is `port`, from the kernel's table (/proc/net/tcp and
/// tcp6): the caster's side of its clients' sockets.
func establishedConnections(port: Int) throws -> Int {
    let hexPort = String(port, radix: 16, uppercase: true)
    let wanted = String(repeating: "0", count: max(0, 4 - hexPort.count)) + hexPort
    var count = 0
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        // Read to the end: procfs files say size 0, and a busy table is longer than a page.
        guard let handle = FileHandle(forReadingAtPath: table) else { continue }
        defer { try? handle.close() }
        let text = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 3, fields[1].hasSuffix(":" + wanted), fields[3] == "01" else { continue }
            count += 1
        }
    }
    return count
}

/// RTCM frames written to the caster and not yet handed to the Receiver: a part of the system the
/// HatDriver waits for, so that simulated time does not run on while frames cross the sockets. Only while
/// the Receiver takes corrections: frames sent or on their way when it stops are not waited for.
final class FramesInFlight: ActivityReporting, CustomStringConvertible {
    private struct State {
        var accepting = false
        var sent = 0
        var arrived = 0
        var changes: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Lock(State())

    func sent(_ count: Int) { change { if $0.accepting { $0.sent += count } } }
    func arrived() { change { $0.arrived += 1 } }

    /// The Receiver's corrections subscription began (true) or ended (false: what is on its way is dropped).
    func accept(_ accepting: Bool) {
        change { state in
            state.accepting = accepting
            state.arrived = state.sent
        }
    }

    private func change(_ body: (inout State) -> Void) {
        let waiters = state.withLock { state in
            body(&state)
            state.changes += 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    var description: String { state.withLock { "\($0.sent) frames sent, \($0.arrived) arrived" } }

    var activity: Activity {
        state.withLock { Activity(isIdle: $0.arrived >= $0.sent, changes: $0.changes) }
    }

    func waitForActivity(after changes: UInt64) async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.changes != changes || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
