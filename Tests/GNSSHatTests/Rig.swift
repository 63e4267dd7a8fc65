import GNSSHat
import GNSSHatTesting
import GNSSProtocol
import PiHardware
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
        board: Board? = nil, connection: SimulatedHat.Connection = .pseudoTerminal, options: ReceiverOptions = ReceiverOptions(),
        settings: ((inout SimulatedReceiver.Settings) -> Void)? = nil
    ) throws {
        let board = try board ?? Self.simulatorBoard()
        self.board = board
        var simulation = SimulatedReceiver.Settings(board: board)
        settings?(&simulation)
        hat = try SimulatedHat(board: board, clock: clock, lines: gpio, connection: connection, timing: .driven,
                               settings: simulation)
        receiver = Receiver(hat: hat, options: options)
        driver = HatDriver(hat: hat, clock: clock)
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

    func runUntil(_ condition: @escaping @Sendable (PowerState) -> Bool) async throws {
        try await driver.run(untilPower: condition, of: receiver)
    }

    func shutdown() async {
        await receiver.shutdown()
        await hat.shutdown()
    }
}
