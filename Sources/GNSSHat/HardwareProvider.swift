// The one seam between a board and its hardware: a provider opens, for a board it serves, the
// hardware a Receiver runs on. The system's provider serves UART and I2C boards; a simulator's
// serves the boards it simulates; the program's composition root says which are on offer.

/// Opens the hardware of the boards it serves.
public protocol HardwareProvider: Sendable {
    /// Whether this provider opens hardware for `board` (its link decides).
    func serves(_ board: Board) -> Bool
    /// Opens the hardware of `board` (one it serves) for one Receiver, with the Receiver's timers
    /// on `clock`. Throws when the hardware cannot be made ready (a simulated hat's pseudo-terminal).
    func open(_ board: Board, clock: any Clock<Duration>) throws -> any ReceiverHardware
    /// Whether the hardware this provider opens for `board` may run on a clock faster (or slower)
    /// than real time, as a simulation can (`gnss-hat watch --speed`); real hardware keeps real time.
    func canScaleTime(for board: Board) -> Bool
}

extension HardwareProvider {
    public func canScaleTime(for board: Board) -> Bool { false }

    /// Opens the hardware of `board`, or throws ``NoHardwareProvider`` when this provider does not
    /// serve it.
    public func hardware(for board: Board, clock: any Clock<Duration>) throws -> any ReceiverHardware {
        guard serves(board) else { throw NoHardwareProvider(board: board) }
        return try open(board, clock: clock)
    }
}

/// Several providers, asked in order: the first that serves a board opens its hardware.
public struct HardwareProviders: HardwareProvider {
    public var providers: [any HardwareProvider]

    public init(_ providers: [any HardwareProvider]) {
        self.providers = providers
    }

    public init(_ providers: any HardwareProvider...) {
        self.init(providers)
    }

    public func serves(_ board: Board) -> Bool {
        provider(for: board) != nil
    }

    public func open(_ board: Board, clock: any Clock<Duration>) throws -> any ReceiverHardware {
        guard let provider = provider(for: board) else { throw NoHardwareProvider(board: board) }
        return try provider.open(board, clock: clock)
    }

    public func canScaleTime(for board: Board) -> Bool {
        provider(for: board)?.canScaleTime(for: board) ?? false
    }

    private func provider(for board: Board) -> (any HardwareProvider)? {
        providers.first { $0.serves(board) }
    }
}

/// No provider on offer serves the board's link (a simulator board without the simulator's
/// provider, say).
public struct NoHardwareProvider: Error, Sendable, CustomStringConvertible {
    public var board: String
    public var link: Board.Link

    public init(board: Board) {
        self.board = board.name
        link = board.link
    }

    public var description: String {
        "no hardware on offer for board \(board) (its link: \(link)); a simulated receiver needs the "
            + "GNSSHatSimulator module's provider"
    }
}
