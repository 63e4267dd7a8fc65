// From the bytes of one connection to what they mean: the answer's head classified (stream,
// sourcetable, refusal), the sourcetable collected to its end, and the stream's RTCM 3 frames cut by
// GNSSProtocol's Framer (CRC-24Q checked; anything else in the stream is dropped). Pure: no I/O.
import GNSSProtocol

/// Reads one connection's bytes into link events.
struct AnswerReader: Sendable {
    /// What the events mean for the link.
    struct Outcome: Sendable {
        var events: [LinkEvent] = []
        /// The answer is done with: the link closes.
        var done = false
    }

    private enum Mode: Sendable {
        case head
        case stream
        case sourcetable([UInt8])
        case done
    }

    /// A sourcetable larger than this is cut here (the largest real ones are a few hundred kB).
    static let sourcetableLimit = 4 << 20
    private static let endMarker = Array("ENDSOURCETABLE".utf8)

    let user: String?
    let mountpoint: String?
    private var parser = NTRIPResponseParser()
    private var framer = Framer(initialCapacity: 4096)
    private var mode = Mode.head

    init(user: String?, mountpoint: String?) {
        self.user = user
        self.mountpoint = mountpoint
    }

    /// Bytes received at `now`; `position` is the client's, should a sourcetable complete.
    mutating func consume(_ bytes: some Sequence<UInt8>, at now: Duration, position: NTRIPPosition?) -> Outcome {
        parser.append(contentsOf: bytes)
        return drain(at: now, position: position)
    }

    /// The caster closed the connection.
    mutating func finish(at now: Duration, position: NTRIPPosition?) -> Outcome {
        parser.finish()
        var outcome = drain(at: now, position: position)
        if !outcome.done {
            outcome.events.append(.failed(.closedByCaster))
            outcome.done = true
            mode = .done
        }
        return outcome
    }

    private mutating func drain(at now: Duration, position: NTRIPPosition?) -> Outcome {
        var outcome = Outcome()
        guard case .done = mode else {
            var frames: [RTCMFrame] = []
            while !outcome.done {
                let part: NTRIPResponsePart?
                do {
                    part = try parser.next()
                } catch {
                    end(with: .failed(Self.failure(error)), frames: &frames, into: &outcome)
                    break
                }
                guard let part else { break }
                handle(part, now: now, position: position, frames: &frames, into: &outcome)
            }
            if !frames.isEmpty { outcome.events.append(.frames(frames)) }
            return outcome
        }
        outcome.done = true
        return outcome
    }

    private mutating func handle(
        _ part: NTRIPResponsePart, now: Duration, position: NTRIPPosition?, frames: inout [RTCMFrame],
        into outcome: inout Outcome
    ) {
        switch (part, mode) {
        case (.head(let head), _):
            if head.isSourcetable {
                mode = .sourcetable([])
            } else if head.code == 200 {
                mode = .stream
                outcome.events.append(.answered(.stream(statusLine: head.statusLine)))
            } else {
                end(with: .answered(.refused(refusal(head))), frames: &frames, into: &outcome)
            }
        case (.body(let bytes), .stream):
            framer.append(contentsOf: bytes)
            while let frame = framer.next() {
                guard frame.kind == .rtcm3, let rtcm = try? RTCM3Frame(frame: ArraySlice(Array(frame.bytes))) else {
                    continue
                }
                frames.append(RTCMFrame(frame: rtcm, receivedAt: now))
            }
        case (.body(let bytes), .sourcetable(var body)):
            let searchFrom = max(0, body.count - Self.endMarker.count)
            body += bytes
            mode = .sourcetable(body)
            if body.count >= Self.sourcetableLimit || Self.contains(Self.endMarker, in: body[searchFrom...]) {
                endSourcetable(body, position: position, frames: &frames, into: &outcome)
            }
        case (.end, .sourcetable(let body)):
            endSourcetable(body, position: position, frames: &frames, into: &outcome)
        case (.end, _):
            end(with: .failed(.closedByCaster), frames: &frames, into: &outcome)
        case (.body, .head), (.body, .done):
            break
        }
    }

    private mutating func endSourcetable(
        _ body: [UInt8], position: NTRIPPosition?, frames: inout [RTCMFrame], into outcome: inout Outcome
    ) {
        let table = Sourcetable(parsing: body)
        end(with: .answered(.sourcetable(table, position: position)), frames: &frames, into: &outcome)
    }

    /// Delivers the frames so far, then `event`, and ends.
    private mutating func end(with event: LinkEvent, frames: inout [RTCMFrame], into outcome: inout Outcome) {
        if !frames.isEmpty {
            outcome.events.append(.frames(frames))
            frames = []
        }
        outcome.events.append(event)
        outcome.done = true
        mode = .done
    }

    /// What a non-200 answer means: 401 a wrong user or password, 403 (or a reason that says so) a
    /// ban, anything else a refusal.
    func refusal(_ head: NTRIPResponseHead) -> NTRIPError {
        if head.code == 401 {
            return .unauthorized(user: user, mountpoint: mountpoint ?? "/", statusLine: head.statusLine)
        }
        if head.code == 403 || head.reason.lowercased().containsBytes(of: "ban") { return .banned(head.statusLine) }
        return .refused(head.statusLine)
    }

    /// A broken answer; a caster's own first line that speaks of a ban is a ban.
    static func failure(_ error: NTRIPResponseError) -> NTRIPError {
        switch error {
        case .unrecognisedStatusLine(let line) where line.lowercased().containsBytes(of: "ban"): .banned(line)
        // The caster closed in the middle of a chunk (it went away): no broken answer.
        case .truncated: .closedByCaster
        default: .malformedAnswer(error)
        }
    }

    private static func contains(_ marker: [UInt8], in bytes: ArraySlice<UInt8>) -> Bool {
        guard bytes.count >= marker.count else { return false }
        var index = bytes.startIndex
        while index + marker.count <= bytes.endIndex {
            if bytes[index..<index + marker.count].elementsEqual(marker) { return true }
            index += 1
        }
        return false
    }
}
