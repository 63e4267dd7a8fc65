// One satellite of the simulated receiver's sky.
import GNSSProtocol

/// One satellite of the simulated sky.
struct SimulatedSatellite: Sendable {
    var system: GNSSSystem
    var svid: Int
    var elevation: Int
    var azimuth: Int
    var strength: Int
    var used: Bool
}
