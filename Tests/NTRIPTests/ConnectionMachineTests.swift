// The connection machine alone: events in, ordered actions out; no sockets, no threads, no clock.
import LinuxSystem
import Testing

@testable import NTRIP

/// A machine and the actions of its last event, with the helpers the tests read them by.
struct MachineRig {
    var machine: ConnectionMachine
    var actions: [ConnectionMachine.Action] = []

    init(mountpoint: String? = "MOUNT", gga: Duration? = .seconds(10)) {
        var configuration = NTRIPConfiguration(
            caster: CasterURL(host: "caster.example", user: "me", mountpoint: mountpoint), softwareVersion: "1.0")
        configuration.ggaInterval = gga
        machine = ConnectionMachine(settings: .init(configuration))
    }

    var connects: [LinkAttempt] {
        actions.compactMap { if case .connect(let attempt) = $0 { attempt } else { nil } }
    }
    func armed(_ timer: ConnectionTimer) -> (generation: UInt64, deadline: Duration)? {
        for case .arm(timer, let generation, let deadline) in actions { return (generation, deadline) }
        return nil
    }
    var closes: [UInt64] { actions.compactMap { if case .close(let link) = $0 { link } else { nil } } }
    var ggas: [UInt64] { actions.compactMap { if case .sendGGA(let link) = $0 { link } else { nil } } }
    var cancels: [ConnectionTimer] { actions.compactMap { if case .cancel(let timer) = $0 { timer } else { nil } } }
    var reports: [NTRIPReport] { actions.compactMap { if case .report(let report) = $0 { report } else { nil } } }
    var failure: (attempt: Int, error: NTRIPError, retryIn: Duration)? {
        for case .report(.attemptFailed(_, let attempt, let error, let retryIn)) in actions {
            return (attempt, error, retryIn)
        }
        return nil
    }

    /// Starts (idle) and streams: returns the link.
    mutating func stream(at now: Duration) -> UInt64 {
        actions = machine.start(hasPosition: true, now: now)
        let link = connects[0].link
        actions = machine.requestSent(link: link, now: now)
        actions = machine.answered(link: link, .stream(statusLine: "ICY 200 OK"), now: now)
        return link
    }
}

@Suite("NTRIP connection machine")
struct ConnectionMachineTests {
    @Test("start with a position: connect at once, the silence timer armed for the data time-out")
    func start() throws {
        var rig = MachineRig()
        rig.actions = rig.machine.start(hasPosition: true, now: .seconds(5))
        let attempt = try #require(rig.connects.first)
        #expect(attempt == LinkAttempt(number: 1, link: 1, purpose: .stream(mountpoint: "MOUNT")))
        #expect(rig.armed(.silence)?.deadline == .seconds(20))
        #expect(rig.machine.phase == .connecting(attempt))
        rig.actions = rig.machine.requestSent(link: 1, now: .seconds(6))
        #expect(rig.actions.isEmpty)
        #expect(rig.machine.phase == .requestSent(attempt))
        rig.actions = rig.machine.answered(link: 1, .stream(statusLine: "ICY 200 OK"), now: .seconds(7))
        #expect(rig.machine.phase == .streaming(attempt, since: .seconds(7)))
        // The report, then the GGA right after the 200, then its timer: in that order.
        guard rig.actions.count == 3, case .report(.streaming) = rig.actions[0], case .sendGGA(1) = rig.actions[1],
            case .arm(.gga, _, .seconds(17)) = rig.actions[2]
        else {
            Issue.record("actions: \(rig.actions)")
            return
        }
        #expect("\(rig.reports[0])" == "ntrip: streaming RTCM from ntrip://me@caster.example:2101/MOUNT (ICY 200 OK, attempt 1)")
    }

    @Test("without a position, connecting waits for the first one")
    func waitsForPosition() {
        var rig = MachineRig()
        rig.actions = rig.machine.start(hasPosition: false, now: .zero)
        #expect(rig.machine.phase == .waitingForPosition)
        #expect(rig.connects.isEmpty)
        #expect("\(rig.reports[0])" == "ntrip: waiting for a position before connecting to ntrip://me@caster.example:2101/MOUNT")
        rig.actions = rig.machine.positionArrived(now: .seconds(3))
        #expect(rig.connects.count == 1)
        // No GGA and a mountpoint named: no position needed.
        var plain = MachineRig(gga: nil)
        plain.actions = plain.machine.start(hasPosition: false, now: .zero)
        #expect(plain.connects.count == 1)
    }

    @Test("GGA every interval while streaming")
    func gga() throws {
        var rig = MachineRig()
        let link = rig.stream(at: .zero)
        let gga = try #require(rig.armed(.gga))
        rig.actions = rig.machine.timerFired(.gga, generation: gga.generation, now: gga.deadline)
        #expect(rig.ggas == [link])
        #expect(rig.armed(.gga)?.deadline == .seconds(20))
        // A stale generation does nothing.
        rig.actions = rig.machine.timerFired(.gga, generation: gga.generation, now: .seconds(20))
        #expect(rig.actions.isEmpty)
    }

    @Test("frames keep the link alive; 15 s without one is a dead link: close, back off 10 s")
    func silence() throws {
        var rig = MachineRig()
        let link = rig.stream(at: .zero)
        rig.actions = rig.machine.framesReceived(link: link, now: .seconds(10))
        #expect(rig.actions.isEmpty)
        var silence = (generation: UInt64(1), deadline: Duration.seconds(15))
        rig.actions = rig.machine.timerFired(.silence, generation: silence.generation, now: silence.deadline)
        silence = try #require(rig.armed(.silence))
        #expect(silence.deadline == .seconds(25))
        rig.actions = rig.machine.timerFired(.silence, generation: silence.generation, now: .seconds(25))
        #expect(rig.closes == [link])
        #expect(rig.cancels == [.gga])
        let failure = try #require(rig.failure)
        #expect(failure.retryIn == .seconds(10))
        #expect("\(failure.error)" == "no RTCM data for 15 s: the link is dead")
        #expect(rig.armed(.retry)?.deadline == .seconds(35))
        #expect(rig.machine.phase == .backingOff(next: 2, until: .seconds(35)))
        #expect("\(rig.reports[0])" == "ntrip: attempt 1 on ntrip://me@caster.example:2101/MOUNT failed: "
            + "no RTCM data for 15 s: the link is dead; next attempt in 10 s")
    }

    @Test("the back-off: 10, 20, 40, 80, 160, 300, 300 s, each attempt one line with its delay")
    func backoff() throws {
        var rig = MachineRig()
        rig.actions = rig.machine.start(hasPosition: true, now: .zero)
        var now = Duration.zero
        var delays: [Duration] = []
        for number in 1...7 {
            let attempt = try #require(rig.connects.first)
            #expect(attempt.number == number)
            rig.actions = rig.machine.linkFailed(
                link: attempt.link, .connectFailed(.invalidAddress("x", reason: "test")), now: now)
            #expect(rig.reports.count == 1)
            let failure = try #require(rig.failure)
            #expect(failure.attempt == number)
            delays.append(failure.retryIn)
            let retry = try #require(rig.armed(.retry))
            #expect(retry.deadline == now + failure.retryIn)
            // A retry timer that fires early (a stale generation) does nothing.
            #expect(rig.machine.timerFired(.retry, generation: retry.generation - 1, now: retry.deadline).isEmpty)
            now = retry.deadline
            rig.actions = rig.machine.timerFired(.retry, generation: retry.generation, now: now)
        }
        #expect(delays == [10, 20, 40, 80, 160, 300, 300].map { Duration.seconds($0) })
    }

    @Test("a stream that lasted 60 s resets the back-off; a shorter one does not")
    func reset() throws {
        var rig = MachineRig()
        // Two failures: the next delay would be 40 s.
        rig.actions = rig.machine.start(hasPosition: true, now: .zero)
        for _ in 0..<2 {
            let attempt = try #require(rig.connects.first)
            rig.actions = rig.machine.linkFailed(link: attempt.link, .closedByCaster, now: .zero)
            let retry = try #require(rig.armed(.retry))
            rig.actions = rig.machine.timerFired(.retry, generation: retry.generation, now: retry.deadline)
        }
        // Streams 59 s, then closes: still doubling (40 s).
        var link = try #require(rig.connects.first).link
        var start = rig.machine.lastData
        rig.actions = rig.machine.answered(link: link, .stream(statusLine: "ICY 200 OK"), now: start)
        rig.actions = rig.machine.framesReceived(link: link, now: start + .seconds(59))
        rig.actions = rig.machine.linkFailed(link: link, .closedByCaster, now: start + .seconds(59))
        #expect(rig.failure?.retryIn == .seconds(40))
        var retry = try #require(rig.armed(.retry))
        rig.actions = rig.machine.timerFired(.retry, generation: retry.generation, now: retry.deadline)
        // Streams 60 s with frames all along: the next failure waits 10 s, and counts as attempt 1.
        link = try #require(rig.connects.first).link
        start = retry.deadline
        rig.actions = rig.machine.answered(link: link, .stream(statusLine: "ICY 200 OK"), now: start)
        rig.actions = rig.machine.framesReceived(link: link, now: start + .seconds(60))
        rig.actions = rig.machine.linkFailed(link: link, .closedByCaster, now: start + .seconds(61))
        #expect(rig.failure?.retryIn == .seconds(10))
        #expect(rig.machine.failuresInARow == 1)
        retry = try #require(rig.armed(.retry))
        rig.actions = rig.machine.timerFired(.retry, generation: retry.generation, now: retry.deadline)
        #expect(rig.connects.first?.number == 1)
    }

    @Test("401, a ban, a refusal: one line naming the cause, then the back-off")
    func refusals() throws {
        let cases: [(NTRIPError, String)] = [
            (.unauthorized(user: "me", mountpoint: "MOUNT", statusLine: "HTTP/1.0 401 Unauthorized"),
             "the caster refused user 'me' for mountpoint MOUNT (HTTP/1.0 401 Unauthorized): check the user and the password file"),
            (.banned("HTTP/1.1 403 Forbidden"), "the caster banned this client (HTTP/1.1 403 Forbidden)"),
            (.refused("HTTP/1.1 404 Not Found"), "the caster refused the request (HTTP/1.1 404 Not Found)"),
        ]
        for (error, text) in cases {
            var rig = MachineRig()
            rig.actions = rig.machine.start(hasPosition: true, now: .zero)
            rig.actions = rig.machine.answered(link: 1, .refused(error), now: .seconds(1))
            #expect(rig.closes == [1])
            #expect(rig.reports.count == 1)
            #expect("\(rig.reports[0])" == "ntrip: attempt 1 on ntrip://me@caster.example:2101/MOUNT failed: \(text); next attempt in 10 s")
        }
    }

    @Test("a sourcetable where RTCM was expected: the mountpoint is unknown, the line names those that exist")
    func unknownMountpoint() {
        var rig = MachineRig()
        rig.actions = rig.machine.start(hasPosition: true, now: .zero)
        let table = Sourcetable(parsing: Array(SourcetableTests.table.utf8))
        rig.actions = rig.machine.answered(link: 1, .sourcetable(table, position: nil), now: .seconds(1))
        #expect("\(rig.reports[0])" == "ntrip: attempt 1 on ntrip://me@caster.example:2101/MOUNT failed: the caster has no "
            + "mountpoint MOUNT (it sent its sourcetable instead); its mountpoints: BERLIN, POTSDAM, MUNICH, CMRFEED, "
            + "NOWHERE; next attempt in 10 s")
    }

    @Test("no mountpoint named: the sourcetable first, the nearest chosen, then its stream in the same attempt")
    func choose() throws {
        var rig = MachineRig(mountpoint: nil)
        rig.actions = rig.machine.start(hasPosition: true, now: .zero)
        #expect(rig.connects.first?.purpose == .sourcetable)
        let table = Sourcetable(parsing: Array(SourcetableTests.table.utf8))
        let position = NTRIPPosition(latitude: 48.1, longitude: 11.5)
        rig.actions = rig.machine.answered(link: 1, .sourcetable(table, position: position), now: .seconds(1))
        #expect(rig.closes == [1])
        #expect(rig.connects == [LinkAttempt(number: 1, link: 2, purpose: .stream(mountpoint: "MUNICH"))])
        #expect(rig.machine.chosen?.mountpoint == "MUNICH")
        #expect("\(rig.reports[0])" == "ntrip: nearest mountpoint MUNICH (Muenchen), 7.4 km away")
        #expect(rig.machine.casterName == "ntrip://me@caster.example:2101/MUNICH")
        // Nothing to choose from: a failure naming what there is.
        var empty = MachineRig(mountpoint: nil)
        empty.actions = empty.machine.start(hasPosition: true, now: .zero)
        empty.actions = empty.machine.answered(
            link: 1, .sourcetable(Sourcetable(parsing: Array("STR;X;x;CMR;;;;;;0;0\r\n".utf8)), position: position),
            now: .zero)
        guard case .noStreamToChoose(["X"])? = empty.failure?.error else {
            Issue.record("\(empty.actions)")
            return
        }
    }

    @Test("events of an old link and stale timers do nothing")
    func stale() {
        var rig = MachineRig()
        let link = rig.stream(at: .zero)
        #expect(rig.machine.linkFailed(link: link + 5, .closedByCaster, now: .seconds(1)).isEmpty)
        #expect(rig.machine.answered(link: link, .stream(statusLine: "again"), now: .seconds(1)).isEmpty)
        #expect(rig.machine.timerFired(.retry, generation: 1, now: .seconds(1)).isEmpty)
    }

    @Test("stop closes and cancels; a start within 10 s of the last attempt waits the rest")
    func stopAndRestart() throws {
        var rig = MachineRig()
        let link = rig.stream(at: .zero)
        rig.actions = rig.machine.stop(now: .seconds(4))
        #expect(rig.closes == [link])
        #expect(Set(rig.cancels) == [.silence, .gga])
        #expect("\(rig.reports[0])" == "ntrip: disconnected from ntrip://me@caster.example:2101/MOUNT (no subscriber left)")
        #expect(rig.machine.phase == .idle)
        rig.actions = rig.machine.start(hasPosition: true, now: .seconds(6))
        #expect(rig.connects.isEmpty)
        #expect(rig.armed(.retry)?.deadline == .seconds(10))
        #expect("\(rig.reports[0])" == "ntrip: connecting to ntrip://me@caster.example:2101/MOUNT in 4 s "
            + "(casters ban clients that reconnect quickly)")
        let retry = try #require(rig.armed(.retry))
        rig.actions = rig.machine.timerFired(.retry, generation: retry.generation, now: .seconds(10))
        #expect(rig.connects.count == 1)
        // Later than that: at once.
        rig.actions = rig.machine.stop(now: .seconds(11))
        rig.actions = rig.machine.start(hasPosition: true, now: .seconds(30))
        #expect(rig.connects.count == 1)
    }

    @Test("a stop during the back-off keeps it: a start before it ends waits for it")
    func backoffOutlivesStop() throws {
        var rig = MachineRig()
        rig.actions = rig.machine.start(hasPosition: true, now: .zero)
        rig.actions = rig.machine.linkFailed(link: 1, .closedByCaster, now: .zero)
        rig.actions = rig.machine.linkFailed(link: 1, .closedByCaster, now: .zero)
        #expect(rig.actions.isEmpty)
        rig.actions = rig.machine.stop(now: .seconds(2))
        #expect(rig.cancels == [.retry])
        #expect(rig.closes.isEmpty)
        rig.actions = rig.machine.start(hasPosition: true, now: .seconds(3))
        #expect(rig.armed(.retry)?.deadline == .seconds(10))
    }
}
