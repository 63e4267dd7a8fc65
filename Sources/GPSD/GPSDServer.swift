// The service: listeners, clients and the source, on one event-loop thread that sleeps in epoll until
// a client, a report or a signal needs it. Reports arrive on the source's thread and reach the loop
// through an inbox and an eventfd; nothing else crosses threads.

import GPSDProtocol
public import LinuxSystem
import Signals

/// How a ``GPSDServer`` listens and treats its clients.
public struct GPSDServerConfiguration: Sendable {
    /// TCP and Unix addresses to listen on (gpsd's default: `127.0.0.1:2947`).
    public var listen: [SocketAddress]
    /// VERSION's `release` and `rev`. The release is the gpsd release whose protocol is spoken,
    /// so clients that check it accept the service.
    public var release: String
    public var revision: String
    /// Let `?DEVICE=` change the receiver (off: gpsd's read-only mode, `-b`).
    public var allowDeviceChanges: Bool
    /// Keep the receiver on with no watcher (time service).
    public var keepOn: Bool
    /// Bytes queued for a client that does not read before the oldest lines are dropped.
    public var maxQueuedBytes: Int
    /// Lines dropped for one client before it is disconnected.
    public var maxDroppedLines: Int
    /// Connections served at once; more are closed at once.
    public var maxClients: Int
    /// chrony SOCK refclock sockets fed with the receiver's serial time and PPS edges; while one is
    /// set the receiver stays on.
    public var chronySocket: String?
    public var chronyPPSSocket: String?
    /// The wall clock (ns since the epoch) for POLL and DEVICE times; injected in tests.
    public var wallClock: @Sendable () -> Int64
    /// Where the service reports what it does (one line each).
    public var log: @Sendable (String) -> Void

    public init(
        listen: [SocketAddress] = [.ipv4("127.0.0.1", port: 2947)],
        release: String = "3.22",
        revision: String = "gnss-hat",
        allowDeviceChanges: Bool = false,
        keepOn: Bool = false,
        maxQueuedBytes: Int = 256 * 1024,
        maxDroppedLines: Int = 1000,
        maxClients: Int = 1000,
        chronySocket: String? = nil,
        chronyPPSSocket: String? = nil,
        wallClock: @escaping @Sendable () -> Int64 = { WallClock.now() },
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.listen = listen
        self.release = release
        self.revision = revision
        self.allowDeviceChanges = allowDeviceChanges
        self.keepOn = keepOn
        self.maxQueuedBytes = maxQueuedBytes
        self.maxDroppedLines = maxDroppedLines
        self.maxClients = maxClients
        self.chronySocket = chronySocket
        self.chronyPPSSocket = chronyPPSSocket
        self.wallClock = wallClock
        self.log = log
    }
}

/// Counters a running server keeps.
public struct GPSDServerStatistics: Sendable, Equatable {
    /// Connections open now, and those watching.
    public var clients = 0
    public var watchers = 0
    /// Connections accepted and closed since the start.
    public var accepted = 0
    public var closed = 0
    /// Connections refused because ``GPSDServerConfiguration/maxClients`` were connected.
    public var refused = 0
    /// Lines dropped for clients that did not read, and clients disconnected for it.
    public var droppedLines = 0
    public var slowClientsDisconnected = 0
    /// Bytes queued for all clients now, and the most queued for one client at any time.
    public var queuedBytes = 0
    public var maxQueuedBytesPerClient = 0
    /// Times accepting paused because the process ran out of descriptors.
    public var acceptPauses = 0
    /// Requests answered with an ERROR object.
    public var errors = 0
    /// Whether the device is active now.
    public var deviceActive = false

    public init() {}
}

/// A gpsd-protocol server for one source.
///
/// ```swift
/// let server = try GPSDServer(source: source, configuration: .init(listen: [.ipv4("127.0.0.1", port: 2947)]))
/// try server.start()           // serves on its own thread
/// await server.shutdown()      // stops accepting, closes clients, powers the receiver off
/// ```
public final class GPSDServer: Sendable {
    /// The addresses listened on, with the ports the kernel chose for port 0.
    public let addresses: [SocketAddress]
    let source: GPSDSource
    let configuration: GPSDServerConfiguration
    let listeners: [SocketListener]
    let poller: Poller
    let inbox: Inbox
    let shared = Lock(Shared())
    /// The latest reports, for POLL; written on the source's thread as reports go out.
    let memory = ReportMemory()
    /// Tasks in ``waitUntilFinished()``.
    let finishWaiters = ConditionWaiters()
    /// Tasks in ``waitForStatistics(until:)``, resumed after each pass publishes its counters.
    let statisticsWaiters = ConditionWaiters()

    struct Shared {
        var statistics = GPSDServerStatistics()
        var thread: LoopThread?
        var finished = false
        var activityTask: Task<Void, Never>?
    }

    /// Binds every address in `configuration.listen` (failing if one cannot be bound); nothing is
    /// served until ``start(signals:)``. Throws a `SocketError` when an address cannot be bound, a
    /// `SystemError` when the poller or its waker cannot be made.
    public init(source: GPSDSource, configuration: GPSDServerConfiguration = GPSDServerConfiguration()) throws {
        var listeners: [SocketListener] = []
        for address in configuration.listen {
            listeners.append(try SocketListener(address: address))
        }
        self.listeners = listeners
        addresses = listeners.map(\.address)
        poller = try Poller()
        inbox = try Inbox()
        self.source = source
        self.configuration = configuration
    }

    /// Serves on a new thread until ``shutdown()`` or one of `signals` arrives (SIGTERM: stop
    /// accepting, power the receiver off, end; ``waitUntilFinished()`` returns then).
    public func start(signals: SignalWatcher? = nil) throws(SystemError) {
        let loop = try ServerLoop(server: self, signals: signals)
        let thread = try LoopThread(name: "gpsd-loop") { loop.run() }
        shared.withLock { $0.thread = thread }
    }

    /// Stops accepting, tells watchers the device closed, closes every connection, powers the
    /// receiver off (at once, without linger) and returns when the loop has ended.
    public func shutdown() async {
        inbox.post(.stop)
        await waitUntilStopped()
    }

    /// Returns when the loop has ended and the thread ``start(signals:)`` gave it is gone, or
    /// when the calling task is cancelled (then the loop may still be running).
    public func waitUntilStopped() async {
        await waitUntilFinished()
        let thread = shared.withLock { $0.finished ? $0.thread : nil }
        thread?.join()
    }

    /// Returns when the loop has ended, or when the calling task is cancelled (then the loop may
    /// still be running).
    public func waitUntilFinished() async {
        await finishWaiters.wait { shared.withLock { $0.finished } }
    }

    /// Counters, as of the loop's last pass.
    public var statistics: GPSDServerStatistics { shared.withLock { $0.statistics } }

    /// Suspends until the counters of a pass satisfy `condition` (or the task is cancelled): a
    /// test's explicit signal that the loop has seen what it did.
    package func waitForStatistics(until condition: (GPSDServerStatistics) -> Bool) async {
        await statisticsWaiters.wait { condition(statistics) }
    }

    func finished() {
        let activity = shared.withLock { state in
            state.finished = true
            return state.activityTask
        }
        // Cancelling runs the task's cancellation handlers (the activity stream's termination): not under
        // the lock.
        activity?.cancel()
        finishWaiters.resumeAll()
    }
}

/// Work handed to the loop thread from other threads.
enum InboxItem: Sendable {
    /// A client's channel has bytes waiting for writability.
    case writable(client: UInt64)
    /// A write to a client failed, or the client dropped too many lines.
    case failed(client: UInt64, reason: String)
    case tooSlow(client: UInt64)
    case ended(client: UInt64, SignalCompletion)
    case activity(Bool)
    case configured(client: UInt64, Result<GPSDDevice, ConfigureFailure>)
    case stop
    case sourceStopped
    /// Retry the subscriptions that ended with a failure.
    case resubscribe
    /// Hold the receiver on again after the hold ended with a failure.
    case rehold
}

struct ConfigureFailure: Error {
    let message: String
}

/// A queue other threads post to; the first post after the loop drained it wakes the loop.
final class Inbox: Sendable {
    private let items = Lock<[InboxItem]>([])
    let waker: Waker

    init() throws(SystemError) {
        waker = try Waker()
    }

    func post(_ item: InboxItem) {
        let wasEmpty = items.withLock { items -> Bool in
            let wasEmpty = items.isEmpty
            items.append(item)
            return wasEmpty
        }
        if wasEmpty { waker.wake() }
    }

    /// Everything posted so far. The loop drains the waker first, so a post that lands after
    /// this wakes it again.
    func take() -> [InboxItem] {
        items.withLock { items in
            defer { items = [] }
            return items
        }
    }
}

/// The latest TPV and SKY and whether reports came since the device became active.
final class ReportMemory: Sendable {
    struct State {
        var tpv: [UInt8]?
        var sky: [UInt8]?
        var sawData = false
    }

    private let state = Lock(State())

    func record(_ event: GPSDEvent) {
        switch event {
        case .tpv(let line): state.withLock { $0.tpv = line; $0.sawData = true }
        case .sky(let line): state.withLock { $0.sky = line; $0.sawData = true }
        case .batch(let events): for event in events { record(event) }
        default: break
        }
    }

    var snapshot: State { state.withLock { $0 } }

    func deviceActivated() {
        state.withLock { $0.sawData = false }
    }
}
