// The bridge with faults injected into its journal's file and its client's socket wait, through
// LinuxSystem's seam (the mock in force when the bridge was made follows its journal and its socket
// wait onto the receiver's thread and libmosquitto's): EIO and ENOSPC on the journal's write and
// fdatasync, EINTR everywhere. Each failure is one line of the bridge's log, the bridge keeps
// running, no fix the journal took is lost, and none arrives twice beyond what QoS 1 allows.
import Foundation
import GNSSHat
import LinuxSystem
import Signals
import Testing
import TestSupport

@testable import MQTT

@Suite(.serialized, .timeLimit(.minutes(3))) struct BridgeFaultTests {
    /// A recorder with a persistent session on the rig's TPV topic (see ``Paho/recorder``), subscribed.
    func recorder(_ broker: TestBroker, _ rig: BridgeRig) async throws -> Daemon {
        let recorder = try Daemon("paho recorder", executable: debianPython(),
                                  ["-u", "-c", Paho.recorder, "\(broker.port)", brokerUser, brokerPassword,
                                   "recorder", rig.topics.tpv])
        try await recorder.line(containing: "subscribed")
        return recorder
    }

    /// Waits until the recorder has `count` distinct timed TPVs, then returns what it got, each once
    /// where QoS 1 allows a repeat.
    func delivered(_ recorder: Daemon, _ rig: BridgeRig, count: Int) async throws -> [String] {
        let topic = rig.topics.tpv
        try await recorder.lines("\(count) fixes at the recorder") { lines in
            ((try? timedTPVs(lines, topic: topic)).map { Set($0.map(\.time)).count } ?? 0) >= count
        }
        let delivered = try deliveredOnce(recorder.output, topic: topic)
        #expect(delivered.everyTime.count == count)
        #expect(delivered.times == delivered.times.sorted(), "out of order: \(delivered.times)")
        return delivered.times
    }

    /// The bridge's notices about its journal (failed, works again, full, damaged).
    func journalLines(_ rig: BridgeRig) -> [String] {
        rig.log.notices.filter { $0.hasPrefix("the journal ") }
    }

    @Test func eioThenEnospcOnTheJournalsWriteWhileConnectedAreOneLineEachAndEveryFixArrivesOnce() async throws {
        let broker = try TestBroker()
        let mock = SeamMock()
        let rig = try BridgeRig(broker: broker, seam: mock)
        let recorder = try await recorder(broker, rig)
        try rig.bridge.start()
        try await rig.wait("a connection") { $0.connected }
        let local = rig.receiver.fixes.subscribe()
        try await rig.runUntilPositions(3)
        try await rig.waitUntilQuiet()
        for (round, errno) in [Errno.ioError, .noSpaceLeft].enumerated() {
            // Every earlier record is acknowledged, so the next two writes are the next fix's appends
            // (its TPV and OwnTracks messages, in one step): not kept, published at once all the same.
            mock.fail("write", with: errno, times: 2)
            try await rig.runUntilPositions(3)
            try await rig.waitUntilQuiet()
            #expect(mock.pendingFailures == 0)
            try await rig.log.line(containing: "the journal works again", count: round + 1)
        }
        let lines = journalLines(rig)
        try #require(lines.count == 4, "\(lines)")
        #expect(lines[0].hasPrefix("the journal failed: journal: write ") && lines[0].contains("(EIO)"))
        #expect(lines[2].hasPrefix("the journal failed: journal: write ") && lines[2].contains("(ENOSPC)"))
        #expect(lines[1] == "the journal works again" && lines[3] == lines[1])
        let statistics = rig.bridge.statistics
        #expect(statistics.connected && statistics.journalPending == 0 && statistics.unjournaled == 4)
        // Connected throughout: every fix went out once, kept or not.
        let times = try await delivered(recorder, rig, count: rig.producedTimedFixes)
        #expect(times.count == rig.producedTimedFixes)
        local.cancel()
        await rig.shutdown()
        recorder.stop()
    }

    @Test func eioAndEnospcOnTheJournalsSyncWhileTheBrokerIsAwayLoseNothing() async throws {
        let broker = try TestBroker(persistent: true)
        let mock = SeamMock()
        let rig = try BridgeRig(broker: broker, seam: mock)
        let recorder = try await recorder(broker, rig)
        try rig.bridge.start()
        try await rig.wait("a connection") { $0.connected }
        let local = rig.receiver.fixes.subscribe()
        try await rig.runUntilPositions(2)
        try await rig.waitUntilQuiet()
        _ = try await delivered(recorder, rig, count: rig.producedTimedFixes)

        broker.stop()
        try await rig.wait("the lost connection") { !$0.connected }
        for errno in [Errno.ioError, .noSpaceLeft] {
            // While the broker is away every fix is synced: three syncs fail, their fixes stay pending.
            mock.fail("fdatasync", with: errno, times: 3)
            try await rig.runUntilPositions(5)
            let produced = rig.producedFixes
            try await rig.wait("the fixes handled") { $0.fixes == produced }
            #expect(mock.pendingFailures == 0)
        }
        // One line as the syncs begin to fail, one as they work again, each round.
        let lines = journalLines(rig)
        try #require(lines.count == 4, "\(lines)")
        #expect(lines[0].hasPrefix("the journal failed: journal: fdatasync ") && lines[0].contains("(EIO)"))
        #expect(lines[2].hasPrefix("the journal failed: journal: fdatasync ") && lines[2].contains("(ENOSPC)"))
        #expect(lines[1] == "the journal works again" && lines[3] == lines[1])
        #expect(rig.bridge.statistics.unjournaled == 0)

        try broker.start()
        try await rig.wait("the reconnect") { $0.connected }
        try await rig.waitUntilQuiet()
        let times = try await delivered(recorder, rig, count: rig.producedTimedFixes)
        #expect(times.count == rig.producedTimedFixes)
        local.cancel()
        await rig.shutdown()
        recorder.stop()
    }

    @Test func aWriteTheFullDiskRefusesWhileTheBrokerIsAwayLosesThatFixAloneAndSaysSo() async throws {
        let broker = try TestBroker(persistent: true)
        let mock = SeamMock()
        let rig = try BridgeRig(broker: broker, seam: mock)
        let recorder = try await recorder(broker, rig)
        try rig.bridge.start()
        try await rig.wait("a connection") { $0.connected }
        let local = rig.receiver.fixes.subscribe()
        try await rig.runUntilPositions(2)
        try await rig.waitUntilQuiet()
        broker.stop()
        try await rig.wait("the lost connection") { !$0.connected }
        try await rig.runUntilPositions(2)
        let before = rig.producedFixes
        try await rig.wait("the fixes handled") { $0.fixes == before }
        // The next fix (with a position: its TPV and its OwnTracks message) finds the disk full.
        mock.fail("write", with: .noSpaceLeft, times: 2)
        try await rig.runUntilPositions(3)
        let produced = rig.producedFixes
        try await rig.wait("the fixes handled") { $0.fixes == produced }
        #expect(mock.pendingFailures == 0 && rig.bridge.statistics.unjournaled == 2)
        let lines = journalLines(rig)
        #expect(lines.count == 2 && lines[0].contains("(ENOSPC)") && lines[1].contains("works again"), "\(lines)")

        try broker.start()
        try await rig.wait("the reconnect") { $0.connected }
        try await rig.waitUntilQuiet()
        // Every other fix arrives, once.
        let times = try await delivered(recorder, rig, count: rig.producedTimedFixes - 1)
        #expect(times.count == rig.producedTimedFixes - 1)
        local.cancel()
        await rig.shutdown()
        recorder.stop()
    }

    @Test func eintrOnEveryCallOfTheJournalAndTheSocketWaitThroughAnOutageIsNeverSeen() async throws {
        let broker = try TestBroker(persistent: true)
        let mock = SeamMock()
        // The open: the directory, the file, its lock, its length and its replay.
        for call: SystemCall in ["mkdir", "open", "flock", "lseek", "pread"] {
            mock.fail(call, with: .interrupted, times: 3)
        }
        let rig = try BridgeRig(broker: broker, seam: mock)
        #expect(mock.pendingFailures == 0)
        let recorder = try await recorder(broker, rig)
        try rig.bridge.start()
        try await rig.wait("a connection") { $0.connected }
        let local = rig.receiver.fixes.subscribe()
        // Connected: appends, removals and the network thread's waits, interrupted.
        for call: SystemCall in ["write", "poll"] { mock.fail(call, with: .interrupted, times: 20) }
        try await rig.runUntilPositions(5)
        try await rig.waitUntilQuiet()
        broker.stop()
        try await rig.wait("the lost connection") { !$0.connected }
        // Away: every append is synced; the network thread waits out its back-off.
        for call: SystemCall in ["write", "fdatasync", "poll"] { mock.fail(call, with: .interrupted, times: 20) }
        try await rig.runUntilPositions(5)
        try broker.start()
        try await rig.wait("the reconnect") { $0.connected }
        try await rig.waitUntilQuiet()
        #expect(mock.pendingFailures == 0)
        #expect(journalLines(rig).isEmpty, "\(journalLines(rig))")
        #expect(rig.bridge.statistics.unjournaled == 0)
        let times = try await delivered(recorder, rig, count: rig.producedTimedFixes)
        #expect(times.count == rig.producedTimedFixes)
        local.cancel()
        await rig.shutdown()
        recorder.stop()
    }
}
