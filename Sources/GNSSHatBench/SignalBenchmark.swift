import CMallocCounter
import Foundation
import Signals
import Synchronization

/// `bench signal`: the cost of delivering a value to 1, 10 and 100 subscribers (callback and
/// async), and of subscribe + cancel, each next to a hand-written baseline in the same run:
/// (a) a `Mutex`-protected array of closures, (b) an `AsyncStream` per subscriber.
/// GNSSHAT_BENCH_SIGNAL=subscribe-cancel runs only subscribe + cancel (to profile it under callgrind).
enum SignalBenchmark {
    static func run() async throws {
        if ProcessInfo.processInfo.environment["GNSSHAT_BENCH_SIGNAL"] == "subscribe-cancel" {
            try await subscribeCancel()
            return
        }
        for subscribers in [1, 10, 100] {
            let values = 2_000_000 / subscribers
            let ours = await Bench.median { await oursCallback(subscribers: subscribers, values: values) }
            let peer = await Bench.median { mutexArray(subscribers: subscribers, values: values) }
            Bench.report("signal-callback-\(subscribers)", ours: ours, peer: "mutex-array", peerValue: peer,
                         unit: "ns/delivery", target: "ratio<=2")
        }
        for subscribers in [1, 10, 100] {
            let values = 200_000 / subscribers
            let ours = await Bench.median(runs: 3) { await oursAsync(subscribers: subscribers, values: values) }
            let peer = await Bench.median(runs: 3) { await asyncStreams(subscribers: subscribers, values: values) }
            Bench.report("signal-async-\(subscribers)", ours: ours, peer: "asyncstream", peerValue: peer,
                         unit: "ns/delivery", target: "report")
        }
        try await subscribeCancel()
    }

    static func subscribeCancel() async throws {
        let ours = await Bench.median { await oursSubscribeCancel(count: 200_000) }
        let peer = await Bench.median { mutexArraySubscribeCancel(count: 200_000) }
        Bench.report("signal-subscribe-cancel", ours: ours, peer: "mutex-array", peerValue: peer,
                     unit: "ns/op", target: "ours<1000")
        let (oursAllocations, peerAllocations) = await subscribeCancelAllocations(count: 10_000)
        print("signal-subscribe-cancel: heap allocations per subscribe + cancel: ours "
            + "\(String(format: "%.2f", oursAllocations)), mutex-array \(String(format: "%.2f", peerAllocations))")
    }

    /// Heap allocations per subscribe + cancel on a running signal, after a warm-up (the
    /// signal's tables reach their steady size), ours and the peer's.
    static func subscribeCancelAllocations(count: Int) async -> (ours: Double, peer: Double) {
        let (signal, _, hold) = await runningSignal()
        func pass() -> UInt64 {
            let before = gnsshat_allocation_count()
            for _ in 0..<count {
                let token = signal.subscribe(onValue: { _ in })
                token.cancel()
            }
            return gnsshat_allocation_count() - before
        }
        _ = pass()
        let ours = Double(pass()) / Double(count)
        hold.cancel()
        let closures = Mutex<[(id: Int, call: @Sendable (Int) -> Void)]>([])
        closures.withLock { $0.reserveCapacity(1) }
        let before = gnsshat_allocation_count()
        for id in 0..<count {
            closures.withLock { $0.append((id, { _ in })) }
            closures.withLock { list in list.removeAll { $0.id == id } }
        }
        return (ours, Double(gnsshat_allocation_count() - before) / Double(count))
    }

    /// A running signal whose producer is driven by the benchmark.
    static func runningSignal() async -> (RefCountedSignal<Int>, SignalEmitter<Int>, SignalToken) {
        let emitter = Mutex<SignalEmitter<Int>?>(nil)
        let signal = RefCountedSignal<Int> { sending in
            emitter.withLock { $0 = sending }
        } stop: {}
        let hold = signal.hold()
        for await state in signal.stateChanges() where state == .running { break }
        guard let sending = emitter.withLock({ $0 }) else { preconditionFailure("the start hook ran") }
        return (signal, sending, hold)
    }

    static func oursCallback(subscribers: Int, values: Int) async -> Double {
        let (signal, emitter, hold) = await runningSignal()
        let counters = (0..<subscribers).map { _ in Counter() }
        let tokens = counters.map { counter in signal.subscribe(onValue: { counter.count &+= $0 }) }
        let seconds = await Bench.seconds {
            for value in 0..<values { emitter.send(value) }
        }
        check(counters, expected: values)
        tokens.forEach { $0.cancel() }
        hold.cancel()
        return seconds * 1e9 / Double(values * subscribers)
    }

    static func mutexArray(subscribers: Int, values: Int) -> Double {
        let closures = Mutex<[@Sendable (Int) -> Void]>([])
        let counters = (0..<subscribers).map { _ in Counter() }
        for counter in counters { closures.withLock { $0.append { counter.count &+= $0 } } }
        let clock = ContinuousClock()
        let start = clock.now
        for value in 0..<values {
            let snapshot = closures.withLock { $0 }
            for closure in snapshot { closure(value) }
        }
        let elapsed = start.duration(to: clock.now)
        check(counters, expected: values)
        return elapsed.nanoseconds / Double(values * subscribers)
    }

    static func oursAsync(subscribers: Int, values: Int) async -> Double {
        let (signal, emitter, hold) = await runningSignal()
        let subscriptions = (0..<subscribers).map { _ in signal.subscribe(buffering: .bounded(values)) }
        let seconds = await Bench.seconds {
            await withTaskGroup(of: Int.self) { group in
                for subscription in subscriptions {
                    group.addTask {
                        var received = 0
                        do {
                            for try await _ in subscription {
                                received += 1
                                if received == values { break }
                            }
                        } catch {
                            preconditionFailure("the subscription failed: \(error)")
                        }
                        return received
                    }
                }
                for value in 0..<values { emitter.send(value) }
                for await received in group where received != values {
                    preconditionFailure("a subscriber received \(received) of \(values)")
                }
            }
        }
        subscriptions.forEach { $0.cancel() }
        hold.cancel()
        return seconds * 1e9 / Double(values * subscribers)
    }

    static func asyncStreams(subscribers: Int, values: Int) async -> Double {
        let streams = (0..<subscribers).map { _ in AsyncStream.makeStream(of: Int.self, bufferingPolicy: .unbounded) }
        let continuations = Mutex(streams.map(\.continuation))
        let seconds = await Bench.seconds {
            await withTaskGroup(of: Int.self) { group in
                for (stream, _) in streams {
                    group.addTask {
                        var received = 0
                        for await _ in stream {
                            received += 1
                            if received == values { break }
                        }
                        return received
                    }
                }
                for value in 0..<values {
                    let snapshot = continuations.withLock { $0 }
                    for continuation in snapshot { continuation.yield(value) }
                }
                for await received in group where received != values {
                    preconditionFailure("a stream received \(received) of \(values)")
                }
            }
        }
        for (_, continuation) in streams { continuation.finish() }
        return seconds * 1e9 / Double(values * subscribers)
    }

    static func oursSubscribeCancel(count: Int) async -> Double {
        let (signal, _, hold) = await runningSignal()
        let seconds = await Bench.seconds {
            for _ in 0..<count {
                let token = signal.subscribe(onValue: { _ in })
                token.cancel()
            }
        }
        hold.cancel()
        return seconds * 1e9 / Double(count)
    }

    static func mutexArraySubscribeCancel(count: Int) -> Double {
        let closures = Mutex<[(id: Int, call: @Sendable (Int) -> Void)]>([])
        let clock = ContinuousClock()
        let start = clock.now
        for id in 0..<count {
            closures.withLock { $0.append((id, { _ in })) }
            closures.withLock { list in list.removeAll { $0.id == id } }
        }
        return start.duration(to: clock.now).nanoseconds / Double(count)
    }

    static func check(_ counters: [Counter], expected values: Int) {
        let sum = values * (values - 1) / 2
        for counter in counters where counter.count != sum {
            preconditionFailure("a subscriber saw \(counter.count), expected \(sum)")
        }
    }
}

/// A per-subscriber counter touched only by the producer's thread.
final class Counter: @unchecked Sendable {
    var count = 0
}

extension Duration {
    var nanoseconds: Double {
        Double(components.seconds) * 1e9 + Double(components.attoseconds) / 1e9
    }
}
