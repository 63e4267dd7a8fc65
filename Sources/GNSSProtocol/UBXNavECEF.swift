// UBX NAV-POSECEF (0x01 0x01) and NAV-VELECEF (0x01 0x11): the solution in Earth-centred, Earth-fixed
// coordinates. Kept apart from UBX.swift's message enum: they reach the epoch assembler as
// `UBXMessage.other` and are read here (u-blox M8/M10 interface descriptions, 20-byte payloads).

/// A NAV-POSECEF or NAV-VELECEF payload: its epoch's iTOW and the vector, in metres (m/s) and their accuracy.
struct UBXNavECEF {
    enum Kind {
        /// NAV-POSECEF: ecefX, ecefY, ecefZ (cm), pAcc (cm).
        case position
        /// NAV-VELECEF: ecefVX, ecefVY, ecefVZ (cm/s), sAcc (cm/s).
        case velocity
    }

    static let posECEF: UInt8 = 0x01
    static let velECEF: UInt8 = 0x11

    let kind: Kind
    let iTOW: UInt32
    let vector: ECEFVector

    /// Reads `payload` when `id` is NAV-POSECEF or NAV-VELECEF of the right length; `nil` otherwise
    /// (another message, or a runt: the assembler then only marks the epoch with it).
    init?(id: UBX.MessageID, payload: ArraySlice<UInt8>) {
        guard id.messageClass == UBX.Class.nav, payload.count == 20 else { return nil }
        switch id.id {
        case Self.posECEF: kind = .position
        case Self.velECEF: kind = .velocity
        default: return nil
        }
        (iTOW, vector) = payload.withUnsafeBytes { p in
            (p.u32(0), ECEFVector(centimetres: p.i32(4), p.i32(8), p.i32(12), accuracy: p.u32(16)))
        }
    }
}
