import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import Signals
import Testing

/// A receiver on a simulated hat, on a manual clock, with fake GPIO lines to check.
struct Rig {
    let clock = ManualClock()
    let gpio = FakeGPIO()
    let board: Board
    let hat: SimulatedHat
    let receiver: Receiver
    let driver: HatDriver

    static func simulatorBoard() throws -> Board {
        try #require(try BoardCatalog.builtIn("simulator"))
    }

    init(
        board: Board? = nil, connection: SimulatedHat.Connection = .pseudoTerminal,
        options: ReceiverOptions = ReceiverOptions(),
        settings: ((inout SimulatedReceiver.Settings) -> Void)? = nil
    ) throws {
        let board = try board ?? Self.simulatorBoard()
        self.board = board
        var simulation = SimulatedReceiver.Settings(board: board)
        settings?(&simulation)
        hat = try SimulatedHat(board: board, clock: clock, lines: gpio, connection: connection, timing: .driven,
                               settings: simulation)
        receiver = Receiver(on: hat, options: options)
        driver = HatDriver(hat: hat, clock: clock, receiver: receiver)
    }

    /// The fake enable (power) line, once the receiver has requested it.
    var powerLine: FakeOutputLine? {
        guard let enable = board.gpio.enable else { return nil }
        return gpio.output(at: board.gpio.address(enable))
    }

    /// Whether the supply is on, as the fake line says (false before it was ever requested).
    var powerIsOn: Bool { powerLine?.level ?? false }

    /// Runs until a subscription yields a fix with a position.
    func firstPosition(_ subscription: SignalSubscription<Fix>) async throws -> Fix {
        try await driver.run {
            for try await fix in subscription where fix.hasPosition { return fix }
            throw CancellationError()
        }
    }

    /// Subscribes to fixes and runs until one with a position arrives that is newer than every
    /// fix seen before (so a replayed fix does not count).
    func freshPosition() async throws -> (Fix, SignalSubscription<Fix>) {
        let before = receiver.fixes.latest?.value.time
        let subscription = receiver.fixes.subscribe()
        let fix = try await driver.run {
            for try await next in subscription where next.hasPosition {
                if let before, let time = next.time, time <= before { continue }
                return next
            }
            throw CancellationError()
        }
        return (fix, subscription)
    }

    /// Runs until a subscription yields a fix with a position newer than `fix`.
    func position(after fix: Fix, _ subscription: SignalSubscription<Fix>) async throws -> Fix {
        let time = fix.time
        return try await driver.run {
            for try await next in subscription where next.hasPosition && next.time.map({ $0 > time! }) == true {
                return next
            }
            throw CancellationError()
        }
    }

    func runUntil(_ condition: @escaping @Sendable (PowerState) -> Bool) async throws {
        try await driver.run(untilPower: condition, of: receiver)
    }

    /// Shuts the receiver down, moving time so that a power-on in progress can finish.
    func shutdown() async {
        let receiver = receiver
        _ = try? await driver.run { await receiver.shutdown() }
        await hat.shutdown()
    }
}
