// What a test collects from another thread (log reports, frames, a caster's requests), and an
// async wait for a condition on it: resumed at every new item, with a generous real-time limit that
// only ever ends a failing test (it reports what came).
import Foundation
import LinuxSystem
import TestSupport

final class Recorder<Item: Sendable>: Sendable {
    private struct State {
        var items: [Item] = []
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }

    let name: String
    private let state = Lock(State())

    init(_ name: String) {
        self.name = name
    }

    var items: [Item] { state.withLock { $0.items } }

    func append(_ item: Item) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.items.append(item)
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Suspends until `condition` holds for the items so far; throws after `limit` with what came.
    @discardableResult
    func wait(
        for what: String, limit: Duration = .seconds(30), until condition: @escaping @Sendable ([Item]) -> Bool
    ) async throws -> [Item] {
        let deadline = ContinuousClock.now + limit
        while true {
            let items = self.items
            if condition(items) { return items }
            guard ContinuousClock.now < deadline else {
                throw TestSetupError("\(name): no \(what) within \(limit); got \(items)")
            }
            await changed(after: items.count, before: deadline)
        }
    }

    /// Suspends until there are more than `seen` items, or `deadline`.
    private func changed(after seen: Int, before deadline: ContinuousClock.Instant) async {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(until: deadline)
            self?.resume(id)
        }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.items.count > seen { return true }
                state.waiters[id] = continuation
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
    }

    private func resume(_ id: UInt64) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }
}

extension Recorder where Item: CustomStringConvertible {
    /// Waits for an item whose text contains `text` (the `skip` first ones passed over).
    @discardableResult
    func line(containing text: String, skip: Int = 0, limit: Duration = .seconds(30)) async throws -> String {
        let items = try await wait(for: "'\(text)'", limit: limit) { items in
            items.filter { "\($0)".contains(text) }.count > skip
        }
        return items.map { "\($0)" }.filter { $0.contains(text) }[skip]
    }

    var lines: [String] { items.map { "\($0)" } }
}
