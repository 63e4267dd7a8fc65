import GNSSHat
import GNSSHatSimulator

/// Energy from a simulated receiver's time in each mode at a board's current figures: mWh = mA × h × V.
struct EnergyModel {
    let board: Board

    private var current: Board.Current { board.current }
    private var acquisition: Double { current.acquisition ?? 0 }
    private var tracking: Double { current.tracking ?? acquisition }

    /// What the receiver draws in `mode`: the acquisition current while it boots and searches, the tracking
    /// current with a fix, the board's power-save and standby figures, and while off the backup supply's
    /// current only when the board's power-off keeps backup RAM (a cut supply draws nothing).
    func milliamps(in mode: SimulatedReceiver.Mode) -> Double {
        switch mode {
        case .booting, .acquiring: acquisition
        case .tracking: tracking
        case .powerSave: current.powerSave ?? tracking
        case .standby, .gnssStopped: current.standby ?? tracking
        case .backup, .perpetualBackup: current.backup ?? 0
        case .off: board.power.offKeepsBackup ? (current.backup ?? 0) : 0
        }
    }

    /// The energy of `times` (a day's time in each mode), in mWh.
    func milliwattHours(_ times: [SimulatedReceiver.Mode: Duration]) -> Double {
        times.reduce(0) { sum, entry in sum + hours(entry.value) * milliamps(in: entry.key) } * current.volts
    }

    /// A receiver that is never powered down for `day` (gpsd's, or a continuous subscriber's): one
    /// boot and cold start at the acquisition current, then tracking. Computed from the board's
    /// simulation figures, not simulated epoch by epoch.
    func alwaysOn(for day: Duration) -> Double {
        let simulation = board.simulation ?? Board.Simulation()
        let start = simulation.boot + simulation.coldStart
        return (hours(start) * acquisition + hours(day - start) * tracking) * current.volts
    }

    private func hours(_ duration: Duration) -> Double { EnergyBenchmark.seconds(duration) / 3600 }
}
