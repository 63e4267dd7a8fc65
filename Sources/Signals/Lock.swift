// Signals' own copy of LinuxSystem's `Lock`: Signals depends on nothing but the standard library and
// Synchronization, so it cannot import it. Internal (usable from Signals' inlinable code only): every
// other module uses LinuxSystem's.
public import Synchronization  // used by inlinable code

/// A `Mutex` whose ordering ThreadSanitizer can see.
///
/// The standard library's `Mutex` takes its futex in code that is not built with the
/// sanitizer, so `swift test --sanitize=thread` reports every access it protects as a race.
/// Inside the lock this type also does an acquiring load and a releasing store of an atomic
/// that lives in instrumented code: the mutex orders them, so the sanitizer sees each critical
/// section happen after the previous one. Both are plain moves on x86-64.
@usableFromInline
struct Lock<State: ~Copyable>: ~Copyable, @unchecked Sendable {
    #if compiler(>=6.3)
    @usableFromInline let mutex: Mutex<State>
    @usableFromInline let order = Atomic<UInt8>(0)

    // Inlinable, so that it is specialised for the state it guards: the unspecialised generic
    // initialiser cost a subscribe about 8 % of its time.
    @inlinable
    init(_ initial: consuming sending State) {
        mutex = Mutex(initial)
    }

    /// Runs `body` with exclusive access to the state (`Mutex.withLock`).
    @inlinable
    borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending State) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock { (state: inout sending State) throws(E) -> sending Result in
            _ = order.load(ordering: .acquiring)
            defer { order.store(0, ordering: .releasing) }
            return try body(&state)
        }
    }
    #else
    // Swift 6.2's region checker rejects handing `Mutex.withLock`'s `inout sending` state to a
    // closure parameter, which 6.3 accepts: there the mutex guards the state kept beside it, and
    // `withLock` has no `sending` annotations (the same critical sections; @unchecked Sendable either way).
    @usableFromInline let mutex = Mutex<Void>(())
    @usableFromInline let order = Atomic<UInt8>(0)
    @usableFromInline let storage: UnsafeMutablePointer<State>

    @inlinable
    init(_ initial: consuming sending State) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: initial)
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Runs `body` with exclusive access to the state.
    @inlinable
    borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout State) throws(E) -> Result
    ) throws(E) -> Result {
        var outcome: Swift.Result<Result, E>? = nil
        mutex.withLock { _ in
            _ = order.load(ordering: .acquiring)
            defer { order.store(0, ordering: .releasing) }
            do throws(E) { outcome = .success(try body(&storage.pointee)) } catch { outcome = .failure(error) }
        }
        switch outcome.take()! {
        case .success(let value): return value
        case .failure(let error): throw error
        }
    }
    #endif
}
