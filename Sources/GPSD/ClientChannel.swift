// A client's outgoing side. Reports arrive on the source's thread and are written to the socket
// there and then, without a hop to the loop thread (the report path's latency is one non-blocking
// send); replies and notices come from the loop thread. Whatever the socket does not take waits in
// the bounded queue until the loop sees the socket writable.

import GPSDProtocol
import LinuxSystem
import Signals

final class ClientChannel: Sendable {
    /// What the caller must do after a write.
    enum Outcome: Equatable {
        /// Everything was written, or waits for a writability event already asked for.
        case done
        /// Bytes wait: the loop must watch the socket for writability.
        case needsWritable
        /// The socket failed (the peer went away): the loop closes the client.
        case failed(String)
        /// The client dropped more lines than allowed: the loop disconnects it.
        case tooSlow
    }

    private struct State {
        var policy = WatchPolicy()
        var output: OutputQueue
        var wantsWritable = false
        var closed = false
        /// The loop ended this client's reports (the service is stopping): a report still on its way
        /// from the source's thread must not land after the last line the loop wrote.
        var reportsEnded = false
        /// A failure or overflow was reported once; the loop closes the client, writes do nothing.
        var doomed = false
        var maxQueued = 0
    }

    let id: UInt64
    let socket: SocketConnection
    let maxDroppedLines: Int
    private let state: Lock<State>

    init(id: UInt64, socket: SocketConnection, queueLimit: Int, maxDroppedLines: Int) {
        self.id = id
        self.socket = socket
        self.maxDroppedLines = maxDroppedLines
        state = Lock(State(output: OutputQueue(limit: queueLimit)))
    }

    /// The policy reports are filtered by (the loop sets it after each request).
    var policy: WatchPolicy {
        get { state.withLock { $0.policy } }
        set { state.withLock { $0.policy = newValue } }
    }

    /// Queues `lines` and writes what the socket takes now (`send`, non-blocking, under the
    /// channel's lock so that a close cannot reuse the descriptor mid-write).
    func write(_ lines: [[UInt8]]) -> Outcome {
        guard !lines.isEmpty else { return .done }
        return state.withLock { state -> Outcome in
            guard !state.closed, !state.doomed else { return .done }
            Self.append(lines, to: &state)
            return finishWrite(&state)
        }
    }

    private static func append(_ lines: [[UInt8]], to state: inout State) {
        for line in lines { state.output.append(line) }
    }

    private func finishWrite(_ state: inout State) -> Outcome {
        if state.output.dropped > maxDroppedLines {
            state.doomed = true
            return .tooSlow
        }
        state.maxQueued = max(state.maxQueued, state.output.queuedBytes)
        if state.wantsWritable { return .done }
        return Self.flush(&state, socket)
    }

    /// The line `event` becomes under the current policy, written at once (the source's thread);
    /// nothing once ``endReports(with:)`` has run. One lock for the policy, the queue and the send.
    func deliver(_ event: GPSDEvent, path: String) -> Outcome {
        state.withLock { state -> Outcome in
            guard !state.closed, !state.doomed, !state.reportsEnded,
                  let line = state.policy.line(for: event, path: path)
            else { return .done }
            state.output.append(line)
            return finishWrite(&state)
        }
    }

    /// Ends this client's reports and writes `lines` (the device's close) as the last it gets: a
    /// report the source's thread is delivering now either lands before them or not at all, since
    /// both take the channel's lock (cancelling the subscription does not wait for a delivery
    /// already under way).
    func endReports(with lines: [[UInt8]]) -> Outcome {
        state.withLock { state -> Outcome in
            state.reportsEnded = true
            guard !state.closed, !state.doomed, !lines.isEmpty else { return .done }
            Self.append(lines, to: &state)
            return finishWrite(&state)
        }
    }

    /// Writes queued bytes after the loop saw the socket writable.
    func flush() -> Outcome {
        state.withLock { state -> Outcome in
            guard !state.closed, !state.doomed else { return .done }
            state.wantsWritable = false
            return Self.flush(&state, socket)
        }
    }

    private static func flush(_ state: inout State, _ socket: SocketConnection) -> Outcome {
        do {
            if try state.output.write(using: { bytes throws(SocketError) in try socket.send(bytes) }) {
                return .done
            }
            state.wantsWritable = true
            return .needsWritable
        } catch {
            state.doomed = true
            return .failed("\(error)")
        }
    }

    /// Whether bytes wait for writability.
    var wantsWritable: Bool { state.withLock { $0.wantsWritable } }

    /// Whether the queue is empty.
    var isDrained: Bool { state.withLock { $0.output.isEmpty } }

    /// Counters: bytes queued now, the most ever queued, lines dropped.
    var counters: (queued: Int, maxQueued: Int, dropped: Int) {
        state.withLock { ($0.output.queuedBytes, $0.maxQueued, $0.output.dropped) }
    }

    /// Closes the socket; later writes do nothing.
    func close() {
        state.withLock { state in
            state.closed = true
            socket.close()
        }
    }
}
