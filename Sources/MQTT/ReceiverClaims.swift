// The one seam between a consumer's demand and a subscription of the Receiver.
//
// A claim is a hold on the Receiver's base signal with the consumer's `FixDemand`: continuous for
// `{}`, a fix at least every interval for `{"interval":600}`, so a consumer that asks for little
// lets the receiver sleep between fixes (a duty cycle, its own power save). The bridge observes and
// publishes the receiver's fixes, whoever powers it.
import GNSSHat
import Signals

/// One subscription of the receiver on behalf of a consumer (or of the standing demand).
struct ReceiverClaim: Sendable {
    private let token: DemandToken<FixDemand>
    /// What the claim asks for now.
    private(set) var demand: ConsumerDemand

    init(token: DemandToken<FixDemand>, demand: ConsumerDemand) {
        self.token = token
        self.demand = demand
    }

    /// The consumer asks for something else: the receiver re-plans if the aggregate changes.
    mutating func change(to demand: ConsumerDemand) {
        self.demand = demand
        token.setDemand(demand.fixDemand)
    }

    func cancel() {
        token.cancel()
    }
}

extension ConsumerDemand {
    /// The Receiver's demand for this consumer's: every epoch, or a fix at least every interval; with its accuracy.
    var fixDemand: FixDemand {
        FixDemand(interval: interval.map { .seconds($0) }, horizontalAccuracy: accuracy)
    }
}

extension Receiver {
    /// Subscribes the receiver for `demand` (powering it on if nobody else does): a hold on its
    /// events with the demand, while the bridge observes (and publishes) the fixes. `onEnd` is called
    /// if the hold ends without being cancelled: with the failure when the receiver failed, with nil
    /// when it shut down.
    func claim(for demand: ConsumerDemand, onEnd: @escaping @Sendable (String?) -> Void) -> ReceiverClaim {
        let token = demandEvents.hold(demand: demand.fixDemand) { completion in
            guard case let .failure(error) = completion else { return }
            onEnd((error as? SignalError) == .shutDown ? nil : "\(error)")
        }
        return ReceiverClaim(token: token, demand: demand)
    }
}
