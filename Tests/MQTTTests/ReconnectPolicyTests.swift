import Testing

@testable import MQTT

/// The reconnect policy driven with no threads and no clock: times are plain offsets.
@Suite struct ReconnectPolicyTests {
    let unreachable = MQTTError(call: "mosquitto_connect", code: .library(.errno), reason: "Connection refused")
    let badPassword = MQTTError(call: "CONNACK", code: .connectionRefused(.badUsernameOrPassword),
                                reason: "Bad user name or password")

    @Test func theFirstAttemptRunsAtOnce() {
        var policy = ReconnectPolicy()
        #expect(policy.start(now: .zero) == [.connect(attempt: 1)])
        #expect(policy.start(now: .seconds(1)) == [])
    }

    @Test func failuresBackOffFromOneSecondDoublingToAMinute() {
        var policy = ReconnectPolicy()
        var now = Duration.zero
        var actions = policy.start(now: now)
        var delays: [Duration] = []
        for attempt in 1...9 {
            #expect(actions == [.connect(attempt: attempt)])
            actions = policy.attemptFailed(unreachable, now: now)
            guard case let .report(.attemptFailed(reported, _, retryIn)) = actions.first,
                  case let .armTimer(generation, deadline) = actions.last, actions.count == 2
            else {
                Issue.record("unexpected actions \(actions)")
                return
            }
            #expect(reported == attempt)
            #expect(deadline == now + retryIn)
            delays.append(retryIn)
            now = deadline
            actions = policy.timerFired(generation: generation, now: now)
        }
        #expect(delays == [1, 2, 4, 8, 16, 32, 60, 60, 60].map { Duration.seconds($0) })
    }

    @Test func aRefusalIsReportedOncePerAttemptAndBacksOffLikeAnyFailure() {
        var policy = ReconnectPolicy()
        _ = policy.start(now: .zero)
        let first = policy.refused(badPassword, now: .zero)
        #expect(first == [.report(.refused(attempt: 1, error: badPassword, retryIn: .seconds(1))),
                          .armTimer(generation: 1, deadline: .seconds(1))])
        // libmosquitto closes the socket after the refused CONNACK: that is not a second failure.
        #expect(policy.connectionLost(nil, now: .milliseconds(1)) == [])
        #expect(policy.timerFired(generation: 1, now: .seconds(1)) == [.connect(attempt: 2)])
        let second = policy.refused(badPassword, now: .seconds(1))
        #expect(second == [.report(.refused(attempt: 2, error: badPassword, retryIn: .seconds(2))),
                           .armTimer(generation: 2, deadline: .seconds(3))])
        #expect(badPassword.isAuthorisationFailure)
    }

    @Test func aConnectionThatLastedResetsTheBackOff() {
        var policy = ReconnectPolicy()
        _ = policy.start(now: .zero)
        for (attempt, now) in [(1, 0), (2, 1), (3, 3)] {
            _ = attempt
            let actions = policy.attemptFailed(unreachable, now: .seconds(now))
            guard case let .armTimer(generation, deadline) = actions.last else {
                Issue.record("no timer in \(actions)")
                return
            }
            _ = policy.timerFired(generation: generation, now: deadline)
        }
        #expect(policy.failuresInARow == 3)
        #expect(policy.connected(now: .seconds(7)) == [.report(.connected(attempt: 4))])
        let lost = policy.connectionLost(nil, now: .seconds(7 + 120))
        #expect(lost == [.report(.connectionLost(error: nil, after: .seconds(120), retryIn: .seconds(1))),
                         .armTimer(generation: 4, deadline: .seconds(128))])
        #expect(policy.timerFired(generation: 4, now: .seconds(128)) == [.connect(attempt: 1)])
    }

    @Test func aConnectionThatDidNotLastKeepsBackingOff() {
        var policy = ReconnectPolicy()
        _ = policy.start(now: .zero)
        _ = policy.connected(now: .zero)
        let first = policy.connectionLost(unreachable, now: .seconds(5))
        #expect(first.last == .armTimer(generation: 1, deadline: .seconds(6)))
        _ = policy.timerFired(generation: 1, now: .seconds(6))
        _ = policy.connected(now: .seconds(6))
        let second = policy.connectionLost(unreachable, now: .seconds(10))
        #expect(second == [.report(.connectionLost(error: unreachable, after: .seconds(4), retryIn: .seconds(2))),
                           .armTimer(generation: 2, deadline: .seconds(12))])
    }

    @Test func aStaleTimerDoesNothing() {
        var policy = ReconnectPolicy()
        _ = policy.start(now: .zero)
        _ = policy.attemptFailed(unreachable, now: .zero)
        #expect(policy.timerFired(generation: 7, now: .seconds(1)) == [])
        #expect(policy.timerFired(generation: 1, now: .seconds(1)) == [.connect(attempt: 2)])
        #expect(policy.timerFired(generation: 1, now: .seconds(2)) == [])
    }

    @Test func stopCancelsTheTimerOrClosesTheConnection() {
        var waiting = ReconnectPolicy()
        _ = waiting.start(now: .zero)
        _ = waiting.attemptFailed(unreachable, now: .zero)
        #expect(waiting.stop() == [.cancelTimer])
        #expect(waiting.timerFired(generation: 1, now: .seconds(1)) == [])
        var connected = ReconnectPolicy()
        _ = connected.start(now: .zero)
        _ = connected.connected(now: .zero)
        #expect(connected.stop() == [.disconnect])
        #expect(connected.connectionLost(nil, now: .seconds(1)) == [])
        #expect(connected.phase == .stopped)
    }

    @Test func aLossDuringTheHandshakeIsTheAttemptFailing() {
        var policy = ReconnectPolicy()
        _ = policy.start(now: .zero)
        let actions = policy.connectionLost(nil, now: .zero)
        guard case .report(.attemptFailed(attempt: 1, _, retryIn: .seconds(1))) = actions.first else {
            Issue.record("unexpected \(actions)")
            return
        }
        #expect(actions.last == .armTimer(generation: 1, deadline: .seconds(1)))
    }

    @Test(arguments: [(1, 1), (2, 2), (3, 4), (6, 32), (7, 60), (100, 60)])
    func delays(failures: Int, seconds: Int) {
        #expect(ReconnectPolicy.Configuration().delay(afterFailures: failures) == .seconds(seconds))
    }
}
