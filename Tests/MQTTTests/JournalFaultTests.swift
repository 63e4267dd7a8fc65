// The journal's real file under injected faults, through LinuxSystem's seam: EINTR at every call it
// makes is retried, EIO and ENOSPC on its writes, syncs and rewrites are typed errors, and what the
// journal said it kept is there after a reopen. The password file's read goes through the same seam.
import Foundation
import LinuxSystem
import Testing
import TestSupport

@testable import MQTT

@Suite struct JournalFaultTests {
    func message(_ index: Int, size: Int = 10) -> OutgoingMessage {
        OutgoingMessage(topic: "gnss-hat/pi/tpv", payload: Array(repeating: UInt8(index & 0xFF), count: size))
    }

    /// A state directory for one test, removed after `body`.
    func withState(_ body: (String) throws -> Void) throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try body(directory.appendingPathComponent("state").path)
    }

    /// The error `body` threw, as the journal describes it (one line), or "no error".
    func failure(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func eintrAtEveryCallTheJournalMakesIsRetried() throws {
        try withState { state in
            let mock = SeamMock()
            let calls: [SystemCall] = [
                "mkdir", "open", "flock", "lseek", "pread", "write", "fdatasync", "ftruncate", "fsync", "rename",
            ]
            for call in calls { mock.fail(call, with: .interrupted, times: 2) }
            try SeamMock.$current.withValue(mock) {
                let journal = try Journal(directory: state, syncPolicy: .everyAppend)
                for index in 1...3 { try journal.append(message(index)) }
                #expect(try journal.acknowledge(2))
                // A rewrite: unlink, open, flock, write, fsync, rename, then the directory's fsync.
                try journal.compact()
                // A message past the truncation size, acknowledged: the file is cut back (ftruncate).
                let big = try journal.append(message(4, size: Journal.truncationSize))
                #expect(try journal.acknowledge(1) && journal.acknowledge(3) && journal.acknowledge(big))
                #expect(journal.fileSize == 0)
                try journal.append(message(5))
            }
            #expect(mock.pendingFailures == 0)
            #expect(try reopenJournal(state).pending.map(\.message) == [message(5)])
        }
    }

    @Test(arguments: [Errno.ioError, .noSpaceLeft])
    func aFailedWriteIsReportedAndLosesOnlyItsOwnMessage(errno: Errno) throws {
        try withState { state in
            let mock = SeamMock()
            try SeamMock.$current.withValue(mock) {
                let journal = try Journal(directory: state, syncPolicy: .explicit)
                try journal.append(message(1))
                mock.fail("write", with: errno)
                #expect(failure { try journal.append(message(2)) } == "journal: write \(state)/journal: \(errno)")
                #expect(journal.pending.map(\.message) == [message(1)])
                try journal.append(message(3))
                try journal.sync()
            }
            let reopened = try reopenJournal(state)
            #expect(reopened.pending.map(\.message) == [message(1), message(3)])
            #expect(reopened.recovery.isClean)
        }
    }

    @Test func aWriteCutShortByAFullDiskLeavesNoDamage() throws {
        try withState { state in
            let armed = Lock<SeamMock?>(nil)
            // The record's first write takes 7 bytes; the disk is full for the next.
            let mock = SeamMock(write: { _, _ in
                armed.withLock { mock in
                    mock?.fail("write", with: .noSpaceLeft)
                    mock = nil
                }
                return 7
            })
            try SeamMock.$current.withValue(mock) {
                let journal = try Journal(directory: state, syncPolicy: .explicit)
                armed.withLock { $0 = mock }
                #expect(failure { try journal.append(message(1)) }.contains("No space left on device (ENOSPC)"))
                try journal.append(message(2))
            }
            let reopened = try reopenJournal(state)
            #expect(reopened.pending.map(\.message) == [message(2)])
            #expect(reopened.recovery.isClean, "the 7 bytes were cut off again: \(reopened.recovery)")
        }
    }

    @Test(arguments: [Errno.ioError, .noSpaceLeft])
    func aFailedSyncIsReportedAndKeepsTheMessagePending(errno: Errno) throws {
        try withState { state in
            let mock = SeamMock()
            try SeamMock.$current.withValue(mock) {
                let journal = try Journal(directory: state, syncPolicy: .explicit)
                try journal.append(message(1))
                mock.fail("fdatasync", with: errno)
                #expect(failure { try journal.sync() } == "journal: fdatasync \(state)/journal: \(errno)")
                #expect(journal.pending.map(\.message) == [message(1)])
                try journal.sync()
            }
            #expect(try reopenJournal(state).pending.map(\.message) == [message(1)])
        }
    }

    @Test(arguments: [("fsync", Errno.ioError), ("fsync", .noSpaceLeft), ("write", .noSpaceLeft),
                      ("rename", .ioError)] as [(SystemCall, Errno)])
    func aFailedRewriteLeavesTheJournalAsItWas(call: SystemCall, errno: Errno) throws {
        try withState { state in
            let mock = SeamMock()
            try SeamMock.$current.withValue(mock) {
                let journal = try Journal(directory: state)
                for index in 1...3 { try journal.append(message(index)) }
                #expect(try journal.acknowledge(2))
                let size = journal.fileSize
                mock.fail(call, with: errno)
                #expect(failure { try journal.compact() } == "journal: \(call) \(state)/journal.tmp: \(errno)")
                #expect(journal.fileSize == size && journal.pending.map(\.sequence) == [1, 3])
                try journal.append(message(4))
            }
            #expect(try FileSystem.entries(of: state) == ["journal"])
            #expect(try reopenJournal(state).pending.map(\.sequence) == [1, 3, 4])
        }
    }

    @Test func aRemovalTheFileRefusesIsReportedAndTheMessageIsSentOnceMoreOnlyAfterARestart() throws {
        try withState { state in
            let mock = SeamMock()
            try SeamMock.$current.withValue(mock) {
                let journal = try Journal(directory: state)
                for index in 1...2 { try journal.append(message(index)) }
                mock.fail("write", with: .ioError)
                #expect(failure { try journal.acknowledge(1) } == "journal: write \(state)/journal: \(Errno.ioError)")
                // Acknowledged: not pending, so not sent again on this run.
                #expect(journal.pending.map(\.sequence) == [2] && !journal.isPending(1))
                #expect(try !journal.acknowledge(1))
            }
            // The file never took the removal: after a restart the message goes once more.
            #expect(try reopenJournal(state).pending.map(\.sequence) == [1, 2])
        }
    }

    /// A seam that tears the next write it is armed for: the write takes its first `bytes`, then the
    /// process stops as a crash or a power cut stops it: the rest of the record never comes (`write`
    /// fails) and the part is not cut off again (`ftruncate` fails), so it stays in the file.
    func tearingSeam() -> (mock: SeamMock, tearNextWrite: @Sendable (_ bytes: Int) -> Void) {
        let cut = Lock<Int?>(nil)
        let mock = Lock<SeamMock?>(nil)
        let seam = SeamMock(write: { _, _ in
            guard let bytes = cut.withLock({ cut -> Int? in
                defer { cut = nil }
                return cut
            }) else { return nil }
            mock.withLock { $0?.fail("write", with: .ioError) }
            mock.withLock { $0?.fail("ftruncate", with: .ioError) }
            return bytes
        })
        mock.withLock { $0 = seam }
        return (seam, { bytes in cut.withLock { $0 = bytes } })
    }

    /// Every cut point of a message record (all its bytes but the last at least one).
    var messageCuts: ClosedRange<Int> { 1...(JournalCodec.encodedSize(of: message(4)) - 1) }

    @Test func aMessageTornAtAnyByteByACrashIsNeverReplayedAndEveryCompleteOneIs() throws {
        for bytes in messageCuts {
            try withState { state in
                let (mock, tearNextWrite) = tearingSeam()
                try SeamMock.$current.withValue(mock) {
                    let journal = try Journal(directory: state)
                    for index in 1...3 { try journal.append(message(index)) }
                    tearNextWrite(bytes)
                    let reported = failure { try journal.append(message(4)) }
                    #expect(reported == "journal: write \(state)/journal: \(Errno.ioError)")
                }
                #expect(mock.pendingFailures == 0, "cut at \(bytes): the write was torn")
                #expect(try FileSystem.contents(of: state + "/journal").count
                    == 3 * JournalCodec.encodedSize(of: message(1)) + bytes)
                try {
                    let reopened = try reopenJournal(state)
                    #expect(reopened.pending.map(\.message) == (1...3).map { message($0) }, "cut at \(bytes)")
                    #expect(reopened.recovery.corruptRegions == 1 && reopened.recovery.corruptBytes == bytes)
                    #expect(reopened.recovery.tornTail)
                    // The open cut the torn part off: what comes next follows a valid record.
                    try reopened.append(message(5))
                }()
                let again = try reopenJournal(state)
                #expect(again.recovery.isClean, "cut at \(bytes): \(again.recovery)")
                #expect(again.pending.map(\.message) == [1, 2, 3, 5].map { message($0) })
            }
        }
    }

    @Test func aTornMessageTheServiceWritesPastIsSkippedAndWhatFollowsIsKept() throws {
        for bytes in messageCuts {
            try withState { state in
                let (mock, tearNextWrite) = tearingSeam()
                try SeamMock.$current.withValue(mock) {
                    let journal = try Journal(directory: state)
                    for index in 1...3 { try journal.append(message(index)) }
                    tearNextWrite(bytes)
                    #expect(throws: JournalError.self) { try journal.append(message(4)) }
                    // The part stayed (its cut failed); the next records follow it in the file.
                    try journal.append(message(5))
                    #expect(try journal.acknowledge(2))
                    // A failed append takes no sequence number: message 5 has the torn record's.
                    #expect(journal.pending.map(\.sequence) == [1, 3, 4])
                    #expect(journal.pending.map(\.message) == [1, 3, 5].map { message($0) })
                }
                let reopened = try reopenJournal(state)
                #expect(reopened.pending.map(\.message) == [1, 3, 5].map { message($0) }, "cut at \(bytes)")
                #expect(reopened.recovery.corruptRegions == 1 && reopened.recovery.corruptBytes == bytes)
                #expect(!reopened.recovery.tornTail)
            }
        }
    }

    @Test func aRemovalTornByACrashSendsItsMessageOnceMoreAndNothingElse() throws {
        let removal = JournalCodec.overhead
        for bytes in 1..<removal {
            try withState { state in
                let (mock, tearNextWrite) = tearingSeam()
                try SeamMock.$current.withValue(mock) {
                    let journal = try Journal(directory: state)
                    for index in 1...3 { try journal.append(message(index)) }
                    #expect(try journal.acknowledge(1))
                    tearNextWrite(bytes)
                    #expect(throws: JournalError.self) { try journal.acknowledge(2) }
                }
                let reopened = try reopenJournal(state)
                #expect(reopened.pending.map(\.sequence) == [2, 3], "cut at \(bytes)")
                #expect(reopened.recovery.corruptBytes == bytes && reopened.recovery.tornTail)
            }
        }
    }

    @Test func thePasswordFileIsReadThroughTheSeam() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("password").path
        try FileSystem.replaceAtomically(path, with: Array("s3cret\nignored".utf8))
        let mock = SeamMock()
        mock.fail("open", with: .interrupted, times: 2)
        mock.fail("read", with: .interrupted, times: 2)
        #expect(try SeamMock.$current.withValue(mock) { try MQTTConfiguration.readPassword(from: path) } == "s3cret")
        #expect(mock.pendingFailures == 0)
        mock.fail("read", with: .ioError)
        let line = failure {
            _ = try SeamMock.$current.withValue(mock) { try MQTTConfiguration.readPassword(from: path) }
        }
        #expect(line == "cannot read the password file '\(path)': \(Errno.ioError)")
    }
}
