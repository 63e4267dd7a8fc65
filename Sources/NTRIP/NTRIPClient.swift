// The public face of the module: an NTRIP caster client whose corrections are a reference-counted
// signal of RTCM 3 frames, connected only while somebody subscribes.
public import LinuxSystem  // TimerThreadClock, the default clock
public import Signals

/// An NTRIP client: RTCM 3 corrections from a caster, as a ``RefCountedSignal``.
///
/// The first subscriber of ``corrections`` connects (NTRIP 1 or 2, plain or TLS, Basic
/// authentication), sends a GGA of the latest ``PositionFeed`` position right after the caster's 200
/// answer and then every ``NTRIPConfiguration/ggaInterval``, and delivers every RTCM 3 frame;
/// the last subscriber leaving closes the socket after ``NTRIPConfiguration/linger``. A link silent for
/// ``NTRIPConfiguration/dataTimeout`` is dead; failures back off 10 s doubling to 5 min (one log line
/// each, with the cause and the delay). With no mountpoint in the URL, the client fetches the
/// sourcetable and takes the nearest RTCM 3 stream to the position (one log line, and
/// ``NTRIPStatus/chosen``).
///
/// Connecting waits for the feed's first position when one is needed (a GGA to send, or a
/// mountpoint to choose); an owner with no position yet can set ``NTRIPConfiguration/ggaInterval`` to
/// nil for a single-base mountpoint, or feed an approximate position.
///
/// ```swift
/// let position = PositionFeed()
/// let client = NTRIPClient(
///     configuration: NTRIPConfiguration(
///         caster: try CasterURL(parsing: "ntrip://me@caster.example:2101/MOUNT"),
///         passwordFile: "/etc/gnss-hat/ntrip.password", softwareVersion: "0.4.0"),
///     log: { print($0) }, position: position)
/// position.update(NTRIPPosition(latitude: 52.5, longitude: 13.4))
/// for try await frame in client.corrections.subscribe(buffering: .bounded(64)) {
///     try receiver.write(frame.bytes)                    // connected while iterating
/// }
/// ```
///
/// The async subscription of ``corrections`` keeps only the newest frame by default
/// (``SubscriptionBuffering/latest``): a slow consumer gets the latest, never a backlog. Nothing is
/// replayed to a new subscriber: it waits for the next frame.
public final class NTRIPClient: Sendable {
    public let configuration: NTRIPConfiguration
    /// RTCM 3 frames, while somebody subscribes.
    public let corrections: RefCountedSignal<RTCMFrame>
    /// The client's position, for the GGA and the nearest mountpoint.
    public let position: PositionFeed
    let driver: ClientDriver
    private let sleepUntil: @Sendable (Duration) async throws -> Void

    /// Makes the client; connects nothing until ``corrections`` has a subscriber. Every timer (the
    /// linger, the data time-out, the GGA interval, the back-off) runs on `clock`: a test's manual
    /// clock, or by default LinuxSystem's ``TimerThreadClock``. `log` gets one ``NTRIPReport`` per
    /// thing that happened (its description is the log line).
    public init<C: Clock<Duration>>(
        configuration: NTRIPConfiguration, clock: C = TimerThreadClock(),
        log: @escaping @Sendable (NTRIPReport) -> Void = { _ in }, position: PositionFeed = PositionFeed()
    ) {
        self.configuration = configuration
        self.position = position
        let reference = clock.now
        let now: @Sendable () -> Duration = { reference.duration(to: clock.now) }
        let sleepUntil: @Sendable (Duration) async throws -> Void = {
            try await clock.sleep(until: reference.advanced(by: $0), tolerance: nil)
        }
        self.sleepUntil = sleepUntil
        let driver = ClientDriver(
            configuration: configuration, position: position, now: now, sleepUntil: sleepUntil, log: log)
        self.driver = driver
        corrections = RefCountedSignal(
            configuration: SignalConfiguration(linger: configuration.linger, replay: .none), clock: clock
        ) { emitter in
            try driver.start(emitter)
        } stop: {
            await driver.stop()
        }
    }

    /// What the client is doing now.
    public var status: NTRIPStatus { driver.status }

    /// The client's clock: time since the client was made (``RTCMFrame/receivedAt`` is on it).
    public var now: Duration { driver.now() }

    /// Fetches the caster's sourcetable (`GET /`) on a connection of its own, whether or not the
    /// corrections are subscribed. Throws ``NTRIPError`` (a refusal, a broken answer, no answer within
    /// the data time-out), ``NTRIPConfigurationError`` or ``TLSError``. Sort it with
    /// ``Sourcetable/streams(nearestTo:_:rtcm3Only:)``.
    public func sourcetable() async throws -> Sourcetable {
        let credentials = try configuration.credentials()
        let tls = configuration.caster.usesTLS ? try TLSContext(caFile: configuration.caFile) : nil
        let request = NTRIPRequest.bytes(
            caster: configuration.caster, mountpoint: nil, version: configuration.version,
            softwareVersion: configuration.softwareVersion, credentials: credentials, gga: nil)
        let target = LinkTarget(host: configuration.caster.host, port: configuration.caster.port, tls: tls,
                                request: request, user: configuration.caster.user, mountpoint: nil)
        let outcome = OneShot<Result<Sourcetable, NTRIPError>>()
        let link = try CasterLink(id: 0, target: target, now: driver.now, position: { nil }) { event in
            switch event {
            case .answered(.sourcetable(let table, _)): outcome.set(.success(table))
            case .answered(.stream(let statusLine)): outcome.set(.failure(.refused("\(statusLine) to GET /")))
            case .answered(.refused(let error)), .failed(let error): outcome.set(.failure(error))
            case .requestSent, .frames: break
            }
        }
        try link.start()
        let timeout = configuration.dataTimeout
        let deadline = driver.now() + timeout
        let timer = Task { [sleepUntil] in
            guard (try? await sleepUntil(deadline)) != nil else { return }
            outcome.set(.failure(.silent(timeout)))
        }
        let result = await outcome.value()
        timer.cancel()
        link.close()
        await link.ended()
        return try result.get()
    }

    /// Ends the corrections for good: every subscriber gets ``SignalError/shutDown``, the connection
    /// closes; returns when it has.
    public func shutdown() async {
        await corrections.shutdown()
    }
}

/// A value set once (later sets are ignored) and awaited.
final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [CheckedContinuation<Value, Never>] = []
    }

    private let state = Lock(State())

    func set(_ value: Value) {
        let waiters = state.withLock { state -> [CheckedContinuation<Value, Never>] in
            guard state.value == nil else { return [] }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    func value() async -> Value {
        await withCheckedContinuation { continuation in
            let value = state.withLock { state -> Value? in
                if let value = state.value { return value }
                state.waiters.append(continuation)
                return nil
            }
            if let value { continuation.resume(returning: value) }
        }
    }
}
