/// Whether the Receiver takes RTK corrections now, as a value-type state machine (events in, ordered
/// actions out, in the manner of Signals' `LifecycleMachine`): it subscribes the corrections source
/// only while (a) a source is attached and the board's receiver takes RTCM 3, (b) the receiver is
/// powered, (c) the aggregate demand needs RTK (its accuracy at or below the board's threshold) and
/// (d) the receiver has a 3D fix to report (a caster's VRS needs a position, and RTK cannot start
/// without one). When any of them goes, it unsubscribes: the source's linger then decides when its
/// connection closes. No clock, no threads; generations make a stale end of an old subscription harmless.
public struct CorrectionsMachine: Sendable, Hashable {
    public enum Event: Sendable, Hashable {
        /// A source was attached (true) or detached (false).
        case source(attached: Bool)
        /// The receiver was powered on (and configured) or is about to power off.
        case power(on: Bool)
        /// The aggregate demand changed: whether it now needs RTK.
        case demand(needsRTK: Bool)
        /// The receiver's latest fix has this mode.
        case fixMode(FixModeKind)
        /// Subscription number `generation` ended by itself (the source failed or shut down).
        case sourceEnded(generation: UInt64)
    }

    /// Whether a fix is good enough to ask for corrections (a 3D fix) or not.
    public enum FixModeKind: Sendable, Hashable {
        case threeD
        case lessThan3D
    }

    public enum Action: Sendable, Hashable {
        /// Subscribe the source; the subscription is number `generation`.
        case subscribe(generation: UInt64)
        /// Cancel the current subscription.
        case unsubscribe
    }

    /// Why corrections are not wanted now (the first condition that fails), or nil when they are.
    public enum Reason: String, Sendable, Hashable, CustomStringConvertible {
        case boardTakesNoRTCM = "the board's receiver takes no RTCM 3"
        case noSource = "no corrections source is attached"
        case receiverOff = "the receiver is off"
        case demandNeedsNoRTK = "no subscriber needs RTK accuracy"
        case waitingForFix = "waiting for a 3D fix"
        case sourceFailed = "the corrections source ended; waiting for a condition to change"

        public var description: String { rawValue }
    }

    /// Whether the board's receiver can use RTCM 3 at all.
    public let boardTakesRTCM: Bool
    public private(set) var attached = false
    public private(set) var powered = false
    public private(set) var needsRTK = false
    public private(set) var hasThreeDFix = false
    /// The subscription in place, if any.
    public private(set) var subscription: UInt64?
    /// The source ended by itself while wanted: no new subscription until a condition goes and comes back.
    public private(set) var blocked = false
    private var generation: UInt64 = 0

    public init(boardTakesRTCM: Bool) {
        self.boardTakesRTCM = boardTakesRTCM
    }

    /// Why corrections are not wanted now; nil: they are (and are subscribed).
    public var reason: Reason? {
        if !boardTakesRTCM { return .boardTakesNoRTCM }
        if !attached { return .noSource }
        if !powered { return .receiverOff }
        if !needsRTK { return .demandNeedsNoRTK }
        if !hasThreeDFix { return .waitingForFix }
        if blocked { return .sourceFailed }
        return nil
    }

    private var conditionsHold: Bool { boardTakesRTCM && attached && powered && needsRTK && hasThreeDFix }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .source(let on):
            // A new source (or none): whatever was subscribed belonged to the old one.
            var actions: [Action] = []
            if subscription != nil {
                subscription = nil
                actions.append(.unsubscribe)
            }
            attached = on
            blocked = false
            return actions + settle()
        case .power(let on): powered = on
        case .demand(let needs): needsRTK = needs
        case .fixMode(let kind): hasThreeDFix = kind == .threeD
        case .sourceEnded(let ended):
            guard ended == subscription else { return [] }
            subscription = nil
            blocked = conditionsHold
            return []
        }
        return settle()
    }

    /// Subscribes or unsubscribes so that a subscription is in place exactly while the conditions hold.
    private mutating func settle() -> [Action] {
        if !conditionsHold { blocked = false }
        let wanted = conditionsHold && !blocked
        switch (wanted, subscription) {
        case (true, nil):
            generation += 1
            subscription = generation
            return [.subscribe(generation: generation)]
        case (false, _?):
            subscription = nil
            return [.unsubscribe]
        default:
            return []
        }
    }
}
