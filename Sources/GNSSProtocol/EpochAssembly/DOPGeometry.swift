// Dilution of precision from the geometry of the used satellites, for the DOPs a receiver did not send
// (gpsd's `fill_dop`).

/// The geometry DOPs of a set of satellites, worked out the first time a report needs them: a receiver
/// that sends all its DOPs (u-blox NAV-DOP) never needs them, and a provisional fix made before any of
/// the epoch's DOPs arrived does not either. One made after some (NAV-PVT's pDOP, say) fills the rest
/// from the last sky's satellites, once an epoch.
struct GeometryOnDemand {
    private let satellites: [SatelliteInView]
    private var known: DilutionOfPrecision?

    init(of satellites: [SatelliteInView]) {
        self.satellites = satellites
    }

    /// Fills what `dops` lacks from the geometry, worked out now if not yet.
    mutating func fillMissing(in dops: inout DilutionOfPrecision) {
        guard !dops.isComplete else { return }
        let geometry = known ?? .geometry(of: satellites)
        known = geometry
        dops.fillMissing(from: geometry)
    }
}

extension DilutionOfPrecision {
    /// The DOPs of the line-of-sight geometry of the used satellites: needs four. A satellite counts once
    /// however many of its signals are listed: DOP is the geometry of the lines of sight. (gpsd counts every
    /// used entry of its SKY, so a satellite with two used signals weighs twice in its DOPs.)
    static func geometry(of satellites: [SatelliteInView]) -> DilutionOfPrecision {
        // The normal matrix (A^T A) of the line-of-sight rows (x, y, z, 1), row-major in a SIMD16.
        var m = SIMD16<Double>()
        var count = 0
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: max(1, satellites.count)) { counted in
            for s in satellites where s.used {
                guard let az = s.azimuth, let el = s.elevation, s.prn > 0 else { continue }
                let key = satelliteKey(s.system, s.svid)
                if counted[0..<count].contains(key) { continue }
                counted[count] = key
                let a = az * .pi / 180
                let e = el * .pi / 180
                let ce = cosine(e)
                let v = SIMD4<Double>(sine(a) * ce, cosine(a) * ce, sine(e), 1)
                for i in 0..<4 {
                    let row = v * v[i]
                    m[i * 4] += row[0]
                    m[i * 4 + 1] += row[1]
                    m[i * 4 + 2] += row[2]
                    m[i * 4 + 3] += row[3]
                }
                count += 1
            }
        }
        guard count >= 4, let inverse = invert4x4(m) else { return DilutionOfPrecision() }
        let xx = inverse[0], yy = inverse[5], zz = inverse[10], tt = inverse[15]
        guard xx >= 0, yy >= 0, zz >= 0, tt >= 0 else { return DilutionOfPrecision() }
        return DilutionOfPrecision(
            x: xx.squareRoot(), y: yy.squareRoot(), vertical: zz.squareRoot(), time: tt.squareRoot(),
            horizontal: (xx + yy).squareRoot(), geometric: (xx + yy + zz + tt).squareRoot(),
            position: (xx + yy + zz).squareRoot())
    }

    /// Gauss-Jordan inversion with partial pivoting of a row-major 4x4 matrix; `nil` when singular.
    static func invert4x4(_ matrix: SIMD16<Double>) -> SIMD16<Double>? {
        withUnsafeTemporaryAllocation(of: Double.self, capacity: 32) { storage -> SIMD16<Double>? in
            // a: the matrix, b: the identity, both row-major; row operations on both.
            guard let a = storage.baseAddress else { return nil }
            let b = a + 16
            for i in 0..<16 {
                a[i] = matrix[i]
                b[i] = i % 5 == 0 ? 1 : 0
            }
            for column in 0..<4 {
                var pivot = column
                for row in column..<4 where abs(a[row * 4 + column]) > abs(a[pivot * 4 + column]) { pivot = row }
                guard abs(a[pivot * 4 + column]) > 1e-12 else { return nil }
                if pivot != column {
                    for j in 0..<4 {
                        swap(&a[column * 4 + j], &a[pivot * 4 + j])
                        swap(&b[column * 4 + j], &b[pivot * 4 + j])
                    }
                }
                let scale = 1 / a[column * 4 + column]
                for j in 0..<4 {
                    a[column * 4 + j] *= scale
                    b[column * 4 + j] *= scale
                }
                for row in 0..<4 where row != column {
                    let factor = a[row * 4 + column]
                    if factor == 0 { continue }
                    for j in 0..<4 {
                        a[row * 4 + j] -= factor * a[column * 4 + j]
                        b[row * 4 + j] -= factor * b[column * 4 + j]
                    }
                }
            }
            var inverse = SIMD16<Double>()
            for i in 0..<16 { inverse[i] = b[i] }
            return inverse
        }
    }
}
