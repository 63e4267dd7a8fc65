// The simulated hats a command opened, kept so that `watch --json` can print a simulated receiver's
// own record of when it was powered beside what the Receiver reported (the two must agree).
import GNSSHat
import GNSSHatSimulator
import LinuxSystem

/// A provider that opens what `inner` opens and keeps every simulated hat among it.
struct HatRecordingProvider: HardwareProvider {
    let inner: HardwareProviders
    let opened: OpenedHats

    func serves(_ board: Board) -> Bool { inner.serves(board) }

    func open(_ board: Board, clock: any Clock<Duration>) throws -> any ReceiverHardware {
        let hardware = try inner.open(board, clock: clock)
        if let hat = hardware as? SimulatedHat { opened.add(hat) }
        return hardware
    }

    func canScaleTime(for board: Board) -> Bool { inner.canScaleTime(for: board) }
}

/// The simulated hats opened so far, in order.
final class OpenedHats: Sendable {
    private let hats = Lock<[SimulatedHat]>([])

    func add(_ hat: SimulatedHat) { hats.withLock { $0.append(hat) } }

    var all: [SimulatedHat] { hats.withLock { $0 } }
}
