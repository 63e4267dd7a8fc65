import Foundation
@testable import GNSSHat
import GNSSProtocol
import Testing
import TestSupport

/// A read loop over a line that delivers messages at given moments, with the kernel keeping what
/// comes while the loop pauses: the moments the loop reads at, given the pacer's pauses.
private struct PacedLine {
    enum Kind {
        /// The epoch's first message; `position` when it carries the position (RMC, NAV-PVT).
        case start(position: Bool)
        case position
        case middle
        case end
    }

    var pacer: ReadPacer
    /// Whether epochs' starts are not urgent (no early position): the decoder then marks each chunk
    /// that leaves no epoch in progress with `nextStartIdle`.
    var idleStarts = false
    /// Whether each epoch's position goes out early: the decoder then marks each chunk that leaves an
    /// epoch in progress whose position came with `sentEarlyPosition`.
    var earlyPositions = false
    /// When the loop can read next (after a pause).
    private var readyAt: Duration = .zero
    /// Every read: when it returned and how many messages it took.
    private(set) var reads: [(at: Duration, messages: Int)] = []
    private var positionPending = false

    init(bytesPerSecond: Int = 11_520) {
        pacer = ReadPacer(bytesPerSecond: bytesPerSecond)
    }

    /// Delivers `messages` (time, kind), in time order, to the pacer as the loop would read them; each
    /// pause's wake-up comes `lateness` after its end.
    mutating func run(_ messages: [(Duration, Kind)], lateness: Duration = .zero) {
        var index = 0
        while index < messages.count {
            let at = max(messages[index].0, readyAt)
            var marks = EpochMarks.none
            var startedHere = false
            var endedHere = false
            var taken = 0
            var inProgress = false
            while index < messages.count && messages[index].0 <= at {
                switch messages[index].1 {
                case .start(let position):
                    startedHere = true
                    inProgress = true
                    positionPending = !position
                case .position:
                    positionPending = false
                    inProgress = true
                case .middle:
                    inProgress = true
                case .end:
                    endedHere = true
                    if startedHere { startedHere = false } else { marks.endedEarlierEpoch = true }
                    inProgress = false
                    positionPending = false
                }
                index += 1
                taken += 1
            }
            marks.startedEpoch = startedHere
            marks.settled = inProgress && !positionPending
            marks.endedEpoch = endedHere
            marks.nextStartIdle = idleStarts && !inProgress
            marks.sentEarlyPosition = earlyPositions && inProgress && !positionPending
            reads.append((at, taken))
            readyAt = pacer.chunk(marks, at: at).map { at + $0 + lateness } ?? at
        }
    }

    /// An NMEA-like epoch at `start`: the position first, a message every 6 ms, the end at `length`.
    static func epoch(at start: Duration, length: Duration = .milliseconds(80),
                      positionFirst: Bool = true) -> [(Duration, Kind)] {
        var messages: [(Duration, Kind)] = [(start, .start(position: positionFirst))]
        var offset = Duration.milliseconds(6)
        if !positionFirst {
            messages.append((start + offset, .position))
            offset += .milliseconds(6)
        }
        while offset < length {
            messages.append((start + offset, .middle))
            offset += .milliseconds(6)
        }
        messages.append((start + length, .end))
        return messages
    }

    static func epochs(_ count: Int, from first: Int = 0, length: Duration = .milliseconds(80),
                       positionFirst: Bool = true) -> [(Duration, Kind)] {
        (first..<first + count).flatMap {
            epoch(at: .milliseconds(100 * $0), length: length, positionFirst: positionFirst)
        }
    }
}

@Suite("The read pacer: a UART's reads through the middle of an epoch")
struct ReadPacerTests {
    @Test("learns four epochs, then sleeps from the position to a margin before the soonest end")
    func learnsThenPauses() {
        var line = PacedLine()
        line.run(PacedLine.epochs(4))
        #expect(line.pacer.pauses == 0)
        #expect(line.reads.count == 4 * 15)  // every message its own read
        #expect(line.pacer.lengths == Array(repeating: .milliseconds(80), count: 4))
        let before = line.reads.count
        line.run(PacedLine.epochs(1, from: 4))
        // The start (the position) at 400 ms, then a pause to 400 + 80 - 1 ms (the least margin: the
        // lengths do not differ); the end is read as it comes.
        let reads = line.reads[before...].map(\.at)
        #expect(Array(reads) == [400, 479, 480].map { .milliseconds($0) })
        #expect(line.reads[before + 1].messages == 13)  // what came while asleep (406 to 478 ms), in one read
        #expect(line.pacer.pauses == 1)
        #expect(line.pacer.overslept == 0)
        // The end still read when it came: its epoch measured in full.
        #expect(line.pacer.lengths.last == .milliseconds(80))
    }

    @Test("an epoch that ends sooner than planned counts as overslept and the pacer learns again")
    func oversleptRelearns() {
        var line = PacedLine()
        line.run(PacedLine.epochs(5))
        #expect(line.pacer.pauses == 1)
        // The receiver sends less (fewer satellites): the end comes at 50 ms, inside the 79 ms pause.
        line.run(PacedLine.epoch(at: .milliseconds(500), length: .milliseconds(50)))
        #expect(line.pacer.pauses == 2)
        #expect(line.pacer.overslept == 1)
        #expect(line.pacer.lengths.isEmpty)
        line.run(PacedLine.epochs(4, from: 6, length: .milliseconds(50)))
        #expect(line.pacer.pauses == 2)  // learning again, awake
        line.run(PacedLine.epochs(1, from: 10, length: .milliseconds(50)))
        #expect(line.pacer.pauses == 3)
        #expect(line.pacer.overslept == 1)
        #expect(line.reads.last?.at == .milliseconds(1050))
    }

    @Test("a wake-up that comes late widens the margin; the epochs' lengths are kept")
    func lateWakeUp() {
        var line = PacedLine()
        line.run(PacedLine.epochs(4))
        // Planned to 479 ms, woken at 481: the end of 480 waited 1 ms.
        line.run(PacedLine.epochs(1, from: 4), lateness: .milliseconds(2))
        #expect(line.pacer.overslept == 1)
        #expect(line.pacer.lateWakeMargin == .milliseconds(1))
        #expect(line.pacer.lengths.count == 4)
        // Paused again at once, 2 ms before the end: woken 1 ms late, it still reads the end as it comes.
        let before = line.reads.count
        line.run(PacedLine.epochs(1, from: 5), lateness: .milliseconds(1))
        #expect(line.reads[before...].map(\.at) == [500, 579, 580].map { .milliseconds($0) })
        #expect(line.pacer.overslept == 1)
        #expect(line.pacer.pauses == 2)
        // Late wake-ups add at most 4 ms.
        for epoch in 6..<20 { line.run(PacedLine.epochs(1, from: epoch), lateness: .milliseconds(10)) }
        #expect(line.pacer.lateWakeMargin == .milliseconds(4))
    }

    @Test("an early position sent: from the fifth epoch on, one wake-up at the start and one past the end")
    func throughTheEnd() {
        var line = PacedLine()
        line.earlyPositions = true
        line.run(PacedLine.epochs(4))
        #expect(line.pacer.pauses == 0)
        let before = line.reads.count
        line.run(PacedLine.epochs(3, from: 4))
        // Each epoch: its start (the position) read as it comes, then a pause to the end margin past
        // the longest length (80 + 3 ms): the rest of the epoch, its end included, in one read.
        let reads = line.reads[before...].map(\.at)
        #expect(Array(reads) == [400, 483, 500, 583, 600, 683].map { .milliseconds($0) })
        #expect(line.reads[before + 1].messages == 14)
        #expect(line.pacer.pauses == 3)
        #expect(line.pacer.endsMissed == 0)
        #expect(line.pacer.overslept == 0)
    }

    @Test("past the end: an epoch longer than any remembered is read to its end as it comes, and learnt")
    func throughTheEndLearns() {
        var line = PacedLine()
        line.earlyPositions = true
        line.run(PacedLine.epochs(5))
        let before = line.reads.count
        line.run(PacedLine.epoch(at: .milliseconds(500), length: .milliseconds(86)))
        // The pause ends at 583, before the end at 586: the rest is read as it comes, the end at 586.
        let reads = line.reads[before...].map(\.at)
        #expect(reads.last == .milliseconds(586) && reads.dropLast().contains { $0 >= .milliseconds(583) })
        #expect(line.pacer.endsMissed == 1)
        #expect(line.pacer.lengths.max() == .milliseconds(86))
        // Then past the new longest by the end margin: 600 + 86 + 3.
        line.run(PacedLine.epoch(at: .milliseconds(600), length: .milliseconds(80)))
        #expect(Array(line.reads.suffix(2).map(\.at)) == [.milliseconds(600), .milliseconds(689)])
    }

    @Test("past the end only when the pause surely ends before the next start is due")
    func throughTheEndNeverReachesTheNextStart() {
        var line = PacedLine()
        line.earlyPositions = true
        line.run(PacedLine.epochs(5, length: .milliseconds(98)))
        let before = line.reads.count
        line.run(PacedLine.epochs(1, from: 5, length: .milliseconds(98)))
        // 98 ms and a margin on either side do not fit in 100: a pause to a margin before the end.
        #expect(Array(line.reads[before...].map(\.at).prefix(3)) == [500, 597, 598].map { Duration.milliseconds($0) })
        #expect(line.pacer.overslept == 0)
    }

    @Test("no pause before the epoch's first position has come: the early TPV waits for nothing")
    func positionFirst() {
        var line = PacedLine()
        line.run(PacedLine.epochs(5, positionFirst: false))
        // Epoch 4: its start (no position) at 400 is read awake, so is the position at 406; the pause
        // then runs from 406 to 400 + 80 - 1.
        let reads = line.reads.filter { $0.at >= .milliseconds(400) }.map(\.at)
        #expect(reads.prefix(3) == [.milliseconds(400), .milliseconds(406), .milliseconds(479)])
        #expect(line.pacer.pauses == 1)
    }

    @Test("one pause per epoch, none while a command's replies are due, none shorter than 5 ms")
    func limits() {
        var line = PacedLine()
        line.run(PacedLine.epochs(4))
        line.pacer.commandSent(at: .milliseconds(390))
        line.run(PacedLine.epochs(10, from: 4))
        // Within a second of the command (epochs 4 to 13 start before 1390 ms) nothing pauses.
        #expect(line.pacer.pauses == 0)
        line.run(PacedLine.epochs(3, from: 14))
        #expect(line.pacer.pauses == 3)

        var short = PacedLine()
        short.run(PacedLine.epochs(8, length: .milliseconds(5)))
        #expect(short.pacer.pauses == 0)
    }

    @Test("no early position to send: from the fifth end on, it sleeps through the next start to a margin before its end")
    func throughTheStart() {
        var line = PacedLine()
        line.idleStarts = true
        line.run(PacedLine.epochs(5))
        // Ends at 80, 180, ..., 480, each read as it came: four intervals of 100 ms by the fifth end,
        // which pauses through epoch 5's start (epoch 4 paused from its start, as before).
        #expect(line.pacer.periods == Array(repeating: .milliseconds(100), count: 4))
        #expect(line.pacer.pauses == 2)
        let before = line.reads.count
        line.run(PacedLine.epochs(2, from: 5))
        // From the end at 480 to 480 + 100 - 1: epoch 5's start and middle in one read, its end as it
        // comes; the same again from 580. No read at an epoch's start any more.
        let reads = line.reads[before...].map(\.at)
        #expect(Array(reads) == [579, 580, 679, 680].map { .milliseconds($0) })
        #expect(line.reads[before].messages == 14)
        #expect(line.pacer.pauses == 4)
        #expect(line.pacer.overslept == 0)
        #expect(line.pacer.periods.count == 6)
        // The epochs read late at their start are not measured from it: the lengths stay as learnt.
        #expect(line.pacer.lengths.allSatisfy { $0 == .milliseconds(80) })
    }

    @Test("through the start: a late wake-up widens the margin, a sooner end is learnt again")
    func throughTheStartOversleeps() {
        var line = PacedLine()
        line.idleStarts = true
        line.run(PacedLine.epochs(5))
        line.run(PacedLine.epochs(1, from: 5), lateness: .milliseconds(2))
        // The pause from 580, planned to 679, woke at 681: epoch 6 whole in one read, its end waited.
        var before = line.reads.count
        line.run(PacedLine.epochs(1, from: 6))
        #expect(line.reads[before...].map(\.at) == [.milliseconds(681)])
        #expect(line.pacer.overslept == 1)
        #expect(line.pacer.lateWakeMargin == .milliseconds(1))
        #expect(line.pacer.periods.count == 5)
        // That end was not read as it came: no interval from it and no pause through epoch 7's start,
        // which pauses from its start instead, 2 ms before its end now.
        before = line.reads.count
        line.run(PacedLine.epochs(1, from: 7))
        #expect(line.reads[before...].map(\.at) == [700, 778, 780].map { .milliseconds($0) })
        // From 780 through the start again, to 780 + 100 - 2.
        before = line.reads.count
        line.run(PacedLine.epochs(1, from: 8))
        #expect(line.reads[before...].map(\.at) == [878, 880].map { .milliseconds($0) })
        // The receiver's epochs come sooner (every 50 ms from 900): the end at 930 is inside the pause
        // planned from 880 to 978, and a shorter interval than learnt: learnt again.
        let overslept = line.pacer.overslept
        line.run((0..<5).flatMap { PacedLine.epoch(at: .milliseconds(900 + 50 * $0), length: .milliseconds(30)) })
        #expect(line.pacer.overslept > overslept)
        #expect(line.pacer.periods.allSatisfy { $0 == .milliseconds(50) })
        #expect(line.pacer.periods.count < 4)
    }

    @Test("through the start: never further than the kernel holds, never while a command's replies are due")
    func throughTheStartLimits() {
        // At 409,600 bytes a second the kernel holds 5 ms of the line: no pause through a start 100 ms
        // away, the start-based pause (capped at 5 ms) as before.
        var fast = PacedLine(bytesPerSecond: 409_600)
        fast.idleStarts = true
        fast.run(PacedLine.epochs(8))
        #expect(fast.pacer.periods.count >= 4)
        let end = EpochMarks(endedEpoch: true, nextStartIdle: true)
        #expect(fast.pacer.chunk(end, at: .milliseconds(880)) == nil)

        var line = PacedLine()
        line.idleStarts = true
        line.run(PacedLine.epochs(5))
        line.pacer.commandSent(at: .milliseconds(490))
        let pauses = line.pacer.pauses
        line.run(PacedLine.epochs(10, from: 5))
        // Within a second of the command (to 1490 ms) nothing pauses; after it, epoch 15 from its start,
        // then through each next start from its end (1580, 1680, 1780).
        #expect(line.pacer.pauses == pauses)
        line.run(PacedLine.epochs(3, from: 15))
        #expect(line.pacer.pauses == pauses + 4)
    }

    @Test("a pause never outlasts what the line's kernel buffer holds")
    func longestPause() {
        #expect(ReadPacer(bytesPerSecond: 11_520).longestPause == .milliseconds(177))
        // 409,600 bytes a second: 2 KiB in 5 ms, not the 79 ms the epochs would allow.
        var fast = PacedLine(bytesPerSecond: 409_600)
        fast.run(PacedLine.epochs(4))
        #expect(fast.pacer.longestPause == .milliseconds(5))
        let start = EpochMarks(startedEpoch: true, settled: true)
        #expect(fast.pacer.chunk(start, at: .milliseconds(400)) == .milliseconds(5))
        var slow = PacedLine()
        slow.run(PacedLine.epochs(4))
        #expect(slow.pacer.chunk(start, at: .milliseconds(400)) == .milliseconds(79))
    }
}

@Suite("Epoch progress: the marks of each chunk, from the decoder")
struct EpochProgressTests {
    /// A capture from gpsd's regression tests read one line at a time, as a read loop gets a
    /// receiver's messages: each chunk's outputs and marks.
    static func chunks(_ name: String, provisionalFixes: Bool) throws
        -> [(outputs: [GNSSDecoder.Output], marks: EpochMarks)]
    {
        let capture = try [UInt8](Data(contentsOf: TestPaths.corpus().appendingPathComponent("gpsd/\(name)")))
        var decoder = GNSSDecoder(options: GNSSDecoder.Options(provisionalFixes: provisionalFixes))
        var progress = EpochProgress(provisionalFixes: provisionalFixes)
        var result: [(outputs: [GNSSDecoder.Output], marks: EpochMarks)] = []
        for line in capture.split(separator: 0x0A, omittingEmptySubsequences: false) {
            decoder.append(contentsOf: Array(line) + [0x0A])
            var outputs: [GNSSDecoder.Output] = []
            while let output = decoder.next() {
                progress.observe(output)
                outputs.append(output)
            }
            result.append((outputs, progress.endChunk()))
        }
        return result
    }

    @Test("each epoch: one chunk starts it, one ends it; settled once its position went out", arguments: [
        "mt3339.log", "ublox-8.log", "bu353s4.log",
    ])
    func marks(capture: String) throws {
        for provisional in [true, false] {
            let chunks = try Self.chunks(capture, provisionalFixes: provisional)
            var epochs = 0
            var (starts, ends) = (0, 0)
            var (settledChunks, urgentChunks) = (0, 0)
            var inProgress = false
            var positionOut = false
            var lastHadPosition = false
            for chunk in chunks {
                var startedHere = false
                var endedEarlier = false
                for output in chunk.outputs {
                    switch output {
                    case .epochStarted:
                        (inProgress, startedHere, positionOut) = (true, true, false)
                    case .provisionalFix:
                        positionOut = true
                    case .epoch(let epoch):
                        epochs += 1
                        if startedHere { startedHere = false } else { endedEarlier = true }
                        inProgress = false
                        lastHadPosition = epoch.fix?.hasPosition ?? false
                    default:
                        break
                    }
                }
                #expect(chunk.marks.startedEpoch == startedHere)
                #expect(chunk.marks.endedEarlierEpoch == endedEarlier)
                let endedAny = chunk.outputs.contains { if case .epoch = $0 { true } else { false } }
                #expect(chunk.marks.endedEpoch == endedAny)
                // The position of the epoch in progress went out early.
                #expect(chunk.marks.sentEarlyPosition == (inProgress && positionOut))
                // The next start needs nobody awake unless its position goes out early.
                #expect(chunk.marks.nextStartIdle == (!inProgress && !(provisional && lastHadPosition)))
                if chunk.marks.startedEpoch { starts += 1 }
                if chunk.marks.endedEarlierEpoch { ends += 1 }
                // Urgent while the epoch's position is due and goes out early: the previous epoch
                // had one and this one has not sent it yet.
                let urgent = inProgress && provisional && !positionOut && lastHadPosition
                #expect(chunk.marks.settled == (inProgress && !urgent), "\(capture), provisional: \(provisional)")
                if chunk.marks.settled { settledChunks += 1 }
                if urgent { urgentChunks += 1 }
            }
            // One sentence a chunk: every epoch but the first began in a chunk before its end.
            #expect(epochs > 10)
            #expect(ends >= epochs - 1)
            #expect(starts >= ends - 1)
            #expect(settledChunks > epochs, "most of each epoch's messages may wait")
            if !provisional { #expect(urgentChunks == 0) }
        }
    }
}
