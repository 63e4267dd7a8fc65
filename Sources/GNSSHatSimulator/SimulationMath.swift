// Small numeric helpers for the simulator: it imports no C library, so sine and cosine are
// computed here (a trajectory needs a few digits, not libm's last bit).

enum SimulationMath {
    /// Sine of `x` radians: range reduction to [-π/4, π/4], then Taylor polynomials
    /// (error below 1e-15 there).
    static func sine(_ x: Double) -> Double {
        guard x.isFinite else { return .nan }
        let quarter = (x / (Double.pi / 2)).rounded()
        let r = x - quarter * (Double.pi / 2)
        let q = Int(quarter.truncatingRemainder(dividingBy: 4))
        switch (q + 4) % 4 {
        case 0: return sinPoly(r)
        case 1: return cosPoly(r)
        case 2: return -sinPoly(r)
        default: return -cosPoly(r)
        }
    }

    static func cosine(_ x: Double) -> Double {
        sine(x + Double.pi / 2)
    }

    private static func sinPoly(_ r: Double) -> Double {
        let r2 = r * r
        var term = r
        var sum = r
        for n in stride(from: 2, through: 22, by: 2) {
            term *= -r2 / Double(n * (n + 1))
            sum += term
        }
        return sum
    }

    private static func cosPoly(_ r: Double) -> Double {
        let r2 = r * r
        var term = 1.0
        var sum = 1.0
        for n in stride(from: 1, through: 21, by: 2) {
            term *= -r2 / Double(n * (n + 1))
            sum += term
        }
        return sum
    }

    static func radians(_ degrees: Double) -> Double { degrees * .pi / 180 }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
