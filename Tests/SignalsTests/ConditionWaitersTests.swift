// ConditionWaiters: a wait ends when its condition holds and the owner says so, or when its task
// is cancelled; a change between the waiter's check and its parking is not missed.

import LinuxSystem
import Signals
import Testing

/// A value shared between tasks (a `Lock` cannot be captured: it is not copyable).
final class SharedValue<Value: Sendable>: Sendable {
    private let lock: Lock<Value>
    init(_ value: Value) { lock = Lock(value) }
    func update<R: Sendable>(_ body: (inout Value) -> R) -> R { lock.withLock { body(&$0) } }
    var value: Value { lock.withLock { $0 } }
}

@Suite("ConditionWaiters", .timeLimit(.minutes(1)))
struct ConditionWaitersTests {
    @Test("a condition that holds already returns at once; later, resumeAll() lets every waiter go")
    func resumes() async {
        let waiters = ConditionWaiters()
        let flag = SharedValue(false)
        await waiters.wait { true }
        let (parked, parkedContinuation) = AsyncStream.makeStream(of: Void.self)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    // Each waiter says it is about to wait; the flag is still false then.
                    parkedContinuation.yield()
                    await waiters.wait { flag.value }
                }
            }
            var count = 0
            for await _ in parked {
                count += 1
                if count == 3 { break }
            }
            flag.update { $0 = true }
            waiters.resumeAll()
            await group.waitForAll()
        }
        #expect(flag.value)
    }

    /// Waits on `waiters` with a condition that numbers its looks (from 1) and asks `look` what each
    /// one does and says; returns how many looks the wait took.
    static func looks(waitingOn waiters: ConditionWaiters, _ look: @escaping @Sendable (Int) -> Bool) async -> Int {
        let looks = SharedValue(0)
        await waiters.wait {
            look(looks.update { looks -> Int in
                looks += 1
                return looks
            })
        }
        return looks.value
    }

    @Test("a resumeAll() while the condition does not hold only makes the waiter look again")
    func resumedWhileFalse() async {
        let waiters = ConditionWaiters()
        // The look after parking resumes every waiter (for some other change) and says no; the
        // waiter must look a third time, which says yes.
        let looks = await Self.looks(waitingOn: waiters) { look in
            if look == 2 { waiters.resumeAll() }
            return look > 2
        }
        #expect(looks == 3, "the wait ended on a resumeAll() with its condition false")
    }

    @Test("a change that lands between the waiter's first look and its parking is not missed")
    func changeWhileParking() async {
        let waiters = ConditionWaiters()
        // The first look says no and, before the waiter parks, the owner changes the state and
        // calls resumeAll() (which finds nobody parked): the look after parking must see it.
        let looks = await Self.looks(waitingOn: waiters) { look in
            if look == 1 { waiters.resumeAll() }
            return look > 1
        }
        #expect(looks == 2)
    }

    @Test("cancelling the waiting task ends its wait; the condition never held")
    func cancelled() async {
        let waiters = ConditionWaiters()
        let task = Task { await waiters.wait { false } }
        task.cancel()
        await task.value
        // A waiter cancelled before it parks ends too.
        await withTaskGroup(of: Void.self) { group in
            group.cancelAll()
            group.addTask { await waiters.wait { false } }
            await group.waitForAll()
        }
    }
}
