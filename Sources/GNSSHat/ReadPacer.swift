// When a UART's read loop may sleep through the middle of an epoch. A receiver sends each epoch as a
// burst of messages (RMC ... GLL, NAV-PVT ... NAV-TIMEUTC) in the same order and at nearly the same
// moments every time; a read per message wakes the service once per message, although only two of
// them matter at once: the epoch's first position (the early TPV) and its end (the complete TPV and
// SKY). The pacer learns how long an epoch lasts from its start to its end and, once the epoch in
// progress has nothing urgent left, lets the loop pause until a little before the end is due; the
// kernel keeps the bytes meanwhile, and one read then takes them all. When the next epoch's start is
// not urgent either (its position does not go out early), it learns the interval from one epoch's
// end to the next's and lets the loop sleep from an end to a little before the next end, through
// the next start: one wake-up an epoch fewer. When the epoch's position went out early (a provisional
// fix), the client already has what matters of it: the loop then sleeps from the position to a margin
// past the longest epoch learnt (never into the next start) and takes the rest, end included, in one
// read: two wake-ups an epoch, its end's reports a few milliseconds later than a read as it came. Pure:
// times come in as durations on the caller's monotonic clock.

import GNSSProtocol

/// What one chunk of bytes did to the epochs, as the decoder saw it.
struct EpochMarks: Sendable, Equatable {
    /// An epoch that had started before this chunk ended in it.
    var endedEarlierEpoch = false
    /// An epoch started in this chunk and is still in progress at its end.
    var startedEpoch = false
    /// The epoch in progress at the chunk's end has nothing urgent before its end: its first position
    /// came (and went out), or none is expected.
    var settled = false
    /// An epoch ended in this chunk (also one that started in it).
    var endedEpoch = false
    /// No epoch is in progress at the chunk's end, and the next one's start is not urgent: its first
    /// position will not go out early (no provisional fixes, or the last epoch had no position).
    var nextStartIdle = false
    /// The epoch in progress at the chunk's end has sent its position early (a provisional fix): the
    /// reports its end adds follow one the client already has.
    var sentEarlyPosition = false

    static let none = EpochMarks()
}

/// Where the stream is in its epochs, from the decoder's outputs one chunk after another: the
/// ``EpochMarks`` of each chunk.
struct EpochProgress: Sendable {
    /// Whether the decoder gives provisional fixes: the epoch's first position then goes out at once.
    let provisionalFixes: Bool
    private var inProgress = false
    private var awaitsPosition = false
    private var lastHadPosition = false
    private var sentEarly = false
    private var marks = EpochMarks.none
    private var startedHere = false
    private var endedHere = false

    init(provisionalFixes: Bool) {
        self.provisionalFixes = provisionalFixes
    }

    mutating func observe(_ output: GNSSDecoder.Output) {
        switch output {
        case .epochStarted:
            startedHere = true
            inProgress = true
            // Urgent until its position came, if the epochs have positions and they go out early.
            awaitsPosition = provisionalFixes && lastHadPosition
            sentEarly = false
        case .provisionalFix:
            awaitsPosition = false
            sentEarly = inProgress
        case .epoch(let epoch):
            endedHere = true
            if startedHere { startedHere = false } else { marks.endedEarlierEpoch = true }
            inProgress = false
            awaitsPosition = false
            sentEarly = false
            lastHadPosition = epoch.fix?.hasPosition ?? false
        case .message, .undecodable:
            break
        }
    }

    /// The marks of the chunk whose outputs were observed since the last call.
    mutating func endChunk() -> EpochMarks {
        var result = marks
        result.startedEpoch = startedHere
        result.settled = inProgress && !awaitsPosition
        result.endedEpoch = endedHere
        result.nextStartIdle = !inProgress && !(provisionalFixes && lastHadPosition)
        result.sentEarlyPosition = inProgress && sentEarly
        marks = .none
        startedHere = false
        endedHere = false
        return result
    }
}

/// The pauses of one UART read loop: fed each chunk's marks and the time its read returned, it says how
/// long the loop may sleep before its next read.
struct ReadPacer: Sendable {
    /// Epochs learnt before the first pause, and after a pause that overslept on a short epoch.
    static let epochsToLearn = 4
    /// Epoch lengths remembered; the shortest of them is the one planned for.
    static let remembered = 8
    /// The shortest pause worth a timer.
    static let shortestPause: Duration = .milliseconds(5)
    /// The margin before the soonest end: this, plus how much the remembered lengths differ (a
    /// steady receiver's epochs differ by the scheduling of a read; one whose output changes, by the
    /// messages it adds and drops), plus what late wake-ups taught.
    static let leastMargin: Duration = .milliseconds(1)
    /// How far past the longest epoch learnt a pause through the end sleeps: an epoch a little
    /// longer than any before (a loaded sender, one more message) still ends inside it, rather than
    /// costing a wake-up of its own (1 ms left about one epoch in 300 outside).
    static let endMargin: Duration = .milliseconds(3)
    /// The most that late wake-ups add to the margin.
    static let mostForLateWakes: Duration = .milliseconds(4)
    /// How long after a command replies are expected: no pauses then (a conversation waits).
    static let conversationWindow: Duration = .seconds(1)

    /// The longest pause: what the line can deliver while the kernel holds it (a tty keeps 4 KiB
    /// before it throttles; half of that is planned for).
    private(set) var longestPause: Duration

    /// The lengths of recent epochs, from the read of their first message to the read of their last.
    private(set) var lengths: [Duration] = []
    /// Recent intervals from one epoch's end to the next's, both read as they came.
    private(set) var periods: [Duration] = []
    /// When the read of the last epoch end returned, if it was read as it came (not after a pause).
    private var lastEnd: Duration?
    /// The pause in progress began at an epoch's end and runs through the next one's start.
    private var pausedThroughStart = false
    /// The pause in progress began after the epoch's early position and runs past its end.
    private var pausedThroughEnd = false
    /// Recent intervals between two epochs' starts, both read as they came: a pause past an end
    /// must end before the next start is due.
    private(set) var startIntervals: [Duration] = []
    /// When the read of the last epoch start returned, if it was read as it came.
    private var lastStart: Duration?
    /// Pauses past an epoch's end that found it still to come (the epoch outlasted every length
    /// remembered; it is then read as it comes, and learnt).
    private(set) var endsMissed = 0
    /// When the read that started the epoch in progress returned (nil: none in progress).
    private var epochStart: Duration?
    private var pausedThisEpoch = false
    /// The next chunk is the first after a pause: an epoch end in it may have waited in the kernel.
    private var justPaused = false
    private var conversationUntil: Duration?
    /// Added to the margin each time a pause ended too late for an epoch of the usual length (the
    /// timer's wake-up came late: a loaded machine), up to ``mostForLateWakes``, for the rest of the
    /// session (a restart at another speed forgets it).
    private(set) var lateWakeMargin: Duration = .zero
    /// Pauses taken, and those after which the epoch's end was already there.
    private(set) var pauses = 0
    private(set) var overslept = 0

    /// A pacer for a line of `bytesPerSecond`.
    init(bytesPerSecond: Int) {
        longestPause = Self.longestPause(bytesPerSecond)
    }

    private static func longestPause(_ bytesPerSecond: Int) -> Duration {
        .milliseconds(2048 * 1000 / max(bytesPerSecond, 1))
    }

    /// The line's speed changed (the receiver was looked for at another): what was learnt is
    /// forgotten, the counts are kept.
    mutating func restart(bytesPerSecond: Int) {
        longestPause = Self.longestPause(bytesPerSecond)
        lengths.removeAll()
        periods.removeAll()
        lastEnd = nil
        epochStart = nil
        pausedThisEpoch = false
        justPaused = false
        pausedThroughStart = false
        pausedThroughEnd = false
        startIntervals.removeAll()
        lastStart = nil
        lateWakeMargin = .zero
    }

    /// A command went to the receiver at `now`: replies are due, so nothing pauses for a while.
    mutating func commandSent(at now: Duration) {
        conversationUntil = now + Self.conversationWindow
    }

    /// The read of a chunk returned at `now` and the decoder found `marks` in it: how long the loop may
    /// sleep before the next read (nil: read again at once).
    mutating func chunk(_ marks: EpochMarks, at now: Duration) -> Duration? {
        let afterPause = justPaused
        justPaused = false
        let throughStart = pausedThroughStart
        pausedThroughStart = false
        let throughEnd = pausedThroughEnd
        pausedThroughEnd = false
        learn(marks, at: now, afterPause: afterPause, throughStart: throughStart, throughEnd: throughEnd)
        return pause(after: marks, at: now)
    }

    /// What the chunk's `marks` teach: the epochs' lengths, the intervals between ends and between
    /// starts, and whether the last pause (`afterPause`, through the start or the end) overslept.
    private mutating func learn(
        _ marks: EpochMarks, at now: Duration, afterPause: Bool, throughStart: Bool, throughEnd: Bool
    ) {
        if marks.endedEpoch {
            if afterPause {
                // The end waited in the kernel: no interval from it. After a pause through the start,
                // that pause overslept.
                if throughStart { Self.overslept(since: lastEnd, now: now, &periods, &overslept, &lateWakeMargin) }
                lastEnd = nil
            } else {
                if let last = lastEnd { Self.remember(now - last, in: &periods) }
                lastEnd = now
            }
        }
        if throughEnd && !marks.endedEarlierEpoch { endsMissed += 1 }
        if marks.endedEarlierEpoch && throughEnd {
            // Slept past the end as planned: it waited in the kernel, so no length from it.
            epochStart = nil
        } else if marks.endedEarlierEpoch && !throughStart {
            if afterPause {
                // The end was in the kernel when the pause ended: it waited.
                Self.overslept(since: epochStart, now: now, &lengths, &overslept, &lateWakeMargin)
            } else if let start = epochStart {
                Self.remember(now - start, in: &lengths)
            }
            epochStart = nil
        }
        if marks.startedEpoch && throughEnd {
            // Slept into the next epoch: the lengths remembered were wrong (learn them again).
            overslept += 1
            lengths.removeAll()
        }
        if marks.startedEpoch {
            if afterPause {
                lastStart = nil
            } else {
                if let last = lastStart { Self.remember(now - last, in: &startIntervals) }
                lastStart = now
            }
        }
        if marks.startedEpoch {
            // A start that waited in the kernel (after a pause, under load) is taken as later than it
            // came: the length measured is then shorter than the epoch's, which pauses less. One that
            // came during a pause through it has had its epoch's pause, and its length is not measured
            // (read at the pause's end, it would be the few milliseconds left of the epoch).
            epochStart = throughStart ? nil : now
            pausedThisEpoch = throughStart
        }
    }

    /// The pause after a chunk with `marks` read at `now` (nil: read again at once).
    private mutating func pause(after marks: EpochMarks, at now: Duration) -> Duration? {
        if marks.endedEpoch, marks.nextStartIdle, lastEnd == now, periods.count >= Self.epochsToLearn,
           let shortest = periods.min(), let longest = periods.max(),
           shortest - margin(spread: longest - shortest) <= longestPause
        {
            // From this end to a margin before the next: through the next start, which nobody awaits.
            // (Epochs further apart than the kernel holds, 1 Hz at 9600 baud say, pause from the start.)
            guard let pause = plannedPause(until: now + shortest, spread: longest - shortest, now: now) else {
                return nil
            }
            pausedThroughStart = true
            return pause
        }
        guard marks.settled, !pausedThisEpoch, let start = epochStart, lengths.count >= Self.epochsToLearn,
              let shortest = lengths.min(), let longest = lengths.max()
        else { return nil }
        if marks.sentEarlyPosition {
            // The client has the epoch's position: what its end adds may wait a little, and the loop
            // then wakes once for it, not once to pause and again for the end's last messages.
            // Only when it surely ends before the next start is due (its position must not wait).
            // (The pause ends up to a millisecond later than planned, rounded up; then a margin before the start.)
            // The median of the intervals remembered: one start read late (a loaded machine) shortens the next.
            let interval = startIntervals.isEmpty ? .zero : startIntervals.sorted()[startIntervals.count / 2]
            if startIntervals.count >= Self.epochsToLearn,
               longest + Self.endMargin + .milliseconds(1) + Self.leastMargin < interval
            {
                guard let pause = pauseThroughEnd(until: start + longest, now: now) else { return nil }
                pausedThisEpoch = true
                pausedThroughEnd = true
                return pause
            }
        }
        guard let pause = plannedPause(until: start + shortest, spread: longest - shortest, now: now) else {
            return nil
        }
        pausedThisEpoch = true
        return pause
    }

    /// A pause overslept: what was measured `since` (the epoch's start, the last end) as long as the
    /// shortest of `remembered` means the wake-up came late (wake earlier next time); shorter, the
    /// receiver's epochs changed (learn them again).
    private static func overslept(
        since: Duration?, now: Duration, _ remembered: inout [Duration], _ count: inout Int,
        _ lateWakeMargin: inout Duration
    ) {
        count += 1
        if let since, let shortest = remembered.min(), now - since >= shortest {
            lateWakeMargin = min(lateWakeMargin + leastMargin, mostForLateWakes)
        } else {
            remembered.removeAll()
        }
    }

    /// Keeps `value` among the last ``remembered`` of `list`.
    private static func remember(_ value: Duration, in list: inout [Duration]) {
        list.append(value)
        if list.count > remembered { list.removeFirst() }
    }

    /// The margin before a planned end: the least, plus `spread`, plus what late wake-ups taught.
    private func margin(spread: Duration) -> Duration {
        Self.leastMargin + spread + lateWakeMargin
    }

    /// A pause from `now` to the least margin past `end` (the end of the longest epoch remembered: an
    /// epoch longer still is read to its end as it comes, and learnt), rounded up to whole milliseconds,
    /// at most ``longestPause``; nil while a command's replies are due or when it would be shorter than
    /// ``shortestPause``.
    private mutating func pauseThroughEnd(until end: Duration, now: Duration) -> Duration? {
        if let until = conversationUntil {
            if now < until { return nil }
            conversationUntil = nil
        }
        let planned = min(end + Self.endMargin - now, longestPause).components
        let milliseconds = planned.seconds * 1000 + (planned.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        let pause = Duration.milliseconds(milliseconds)
        guard pause >= Self.shortestPause else { return nil }
        justPaused = true
        pauses += 1
        return pause
    }

    /// A pause from `now` to a margin before `end` (`spread`: how much the remembered lengths or
    /// intervals differ; see ``margin(spread:)``), at most ``longestPause``; nil while a command's
    /// replies are due or when it would be shorter than ``shortestPause``.
    private mutating func plannedPause(until end: Duration, spread: Duration, now: Duration) -> Duration? {
        if let until = conversationUntil {
            if now < until { return nil }
            conversationUntil = nil
        }
        // In whole milliseconds, rounded down: the loop's wait counts milliseconds and rounds up.
        let planned = min(end - margin(spread: spread) - now, longestPause).components
        let pause = Duration.milliseconds(planned.seconds * 1000 + planned.attoseconds / 1_000_000_000_000_000)
        guard pause >= Self.shortestPause else { return nil }
        justPaused = true
        pauses += 1
        return pause
    }
}
