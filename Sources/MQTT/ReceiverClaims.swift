// The one seam between a consumer's demand and a subscription of the Receiver.
//
// Until the Receiver takes a demand (issue 16's `FixDemand`: continuous, or a fix at least every
// interval), a claim is plain presence: a hold on `receiver.fixes`, which keeps the receiver on while
// it lasts, whatever the interval asked; the interval is kept with the claim and passed here all the
// same. With `FixDemand`, the two lines marked `demand:` below become
// `receiver.fixes.hold(demand: FixDemand(demand), onCompletion: ...)` and
// `token.setDemand(FixDemand(demand))`, and nothing else in the bridge changes.
import GNSSHat
import Signals

/// One subscription of the receiver on behalf of a consumer (or of the standing demand).
struct ReceiverClaim: Sendable {
    private let token: SignalToken
    /// What the claim asks for now (the receiver does not take it yet: see the file's comment).
    private(set) var demand: ConsumerDemand

    init(token: SignalToken, demand: ConsumerDemand) {
        self.token = token
        self.demand = demand
    }

    /// The consumer asks for something else.
    mutating func change(to demand: ConsumerDemand) {
        // demand: plain presence has nothing to tell the receiver; FixDemand will (`token.setDemand`).
        self.demand = demand
    }

    func cancel() {
        token.cancel()
    }
}

extension Receiver {
    /// Subscribes the receiver for `demand` (powering it on if nobody else does): a hold on its
    /// fixes, which the bridge observes (and publishes) whoever powers the receiver. `onEnd` is called
    /// if the hold ends without being cancelled: with the failure when the receiver failed, with nil
    /// when it shut down.
    func claim(for demand: ConsumerDemand, onEnd: @escaping @Sendable (String?) -> Void) -> ReceiverClaim {
        // demand: `fixes.hold(demand: FixDemand(demand), ...)` once the Receiver takes one.
        let token = fixes.hold { completion in
            guard case let .failure(error) = completion else { return }
            onEnd((error as? SignalError) == .shutDown ? nil : "\(error)")
        }
        return ReceiverClaim(token: token, demand: demand)
    }
}
