// Small numeric helpers for the simulator: it imports no C library, so sine and cosine
// are computed here (a trajectory needs a few digits, not libm's last bit), and random
// numbers come from a seeded generator so that every simulation can be replayed exactly.

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

/// SplitMix64: a small, fast, seedable generator (Steele, Lea and Flood 2014).
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
