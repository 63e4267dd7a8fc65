// What a simulated receiver speaks: a u-blox protocol version or MTK's NMEA and PMTK.
public import GNSSHat

extension SimulatedReceiver {
    /// What it speaks.
    public enum Dialect: Sendable, Hashable {
        /// A u-blox with this protocol version (CFG-VALSET from 27).
        case ublox(protocolVersion: Double)
        /// A MediaTek receiver (NMEA and `$PMTK`).
        case mtk

        /// The dialect of a chip family.
        public init(_ family: Board.ChipFamily) {
            switch family {
            case .ubloxGen8: self = .ublox(protocolVersion: 18.0)
            case .ubloxGen9: self = .ublox(protocolVersion: 27.31)
            case .ubloxM10: self = .ublox(protocolVersion: 34.10)
            case .mtk: self = .mtk
            }
        }
    }
}
