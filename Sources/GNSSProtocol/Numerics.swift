// The few elementary functions the protocol layer needs (the standard library has none, and this
// module may not import Glibc). Accurate to a few ulps over the ranges GNSS values use.

@usableFromInline
let halfPi = Double.pi / 2

/// Sine of `x` radians.
@inlinable
public func sine(_ x: Double) -> Double {
    guard x.isFinite else { return .nan }
    let (quadrant, r) = reduceQuarterPi(x)
    switch quadrant & 3 {
    case 0: return sinKernel(r)
    case 1: return cosKernel(r)
    case 2: return -sinKernel(r)
    default: return -cosKernel(r)
    }
}

/// Cosine of `x` radians.
@inlinable
public func cosine(_ x: Double) -> Double {
    guard x.isFinite else { return .nan }
    let (quadrant, r) = reduceQuarterPi(x)
    switch quadrant & 3 {
    case 0: return cosKernel(r)
    case 1: return -sinKernel(r)
    case 2: return -cosKernel(r)
    default: return sinKernel(r)
    }
}

/// Reduces `x` to `r` in [-π/4, π/4] with `x = quadrant * π/2 + r` (Cody-Waite, two-part π/2).
@inlinable
func reduceQuarterPi(_ x: Double) -> (Int, Double) {
    let quadrant = (x / halfPi).rounded()
    let pio2High = 1.570_796_326_734_125_614_17
    let pio2Low = 6.077_100_506_506_192_249_3e-11
    let r = (x - quadrant * pio2High) - quadrant * pio2Low
    return (Int(quadrant), r)
}

@inlinable
func sinKernel(_ x: Double) -> Double {
    let x2 = x * x
    var term = x
    var sum = x
    var n = 1.0
    for _ in 0..<9 {
        term *= -x2 / ((n + 1) * (n + 2))
        sum += term
        n += 2
    }
    return sum
}

@inlinable
func cosKernel(_ x: Double) -> Double {
    let x2 = x * x
    var term = 1.0
    var sum = 1.0
    var n = 0.0
    for _ in 0..<9 {
        term *= -x2 / ((n + 1) * (n + 2))
        sum += term
        n += 2
    }
    return sum
}

/// Arc tangent of `x`, radians.
@inlinable
public func arcTangent(_ x: Double) -> Double {
    guard !x.isNaN else { return .nan }
    if x < 0 { return -arcTangent(-x) }
    if x > 1 { return halfPi - arcTangent(1 / x) }
    // Halve the argument twice (atan x = 2 atan(x / (1 + sqrt(1 + x²)))) so the series converges fast.
    var y = x
    var scale = 1.0
    for _ in 0..<3 {
        y = y / (1 + (1 + y * y).squareRoot())
        scale *= 2
    }
    let y2 = y * y
    var term = y
    var sum = y
    var k = 1.0
    for _ in 0..<12 {
        term *= -y2
        k += 2
        sum += term / k
    }
    return sum * scale
}

/// Arc tangent of `y / x` in the right quadrant, radians in (-π, π].
@inlinable
public func arcTangent2(_ y: Double, _ x: Double) -> Double {
    if x > 0 { return arcTangent(y / x) }
    if x < 0 { return y >= 0 ? arcTangent(y / x) + .pi : arcTangent(y / x) - .pi }
    if y > 0 { return halfPi }
    if y < 0 { return -halfPi }
    return 0
}

/// Arc sine of `x` (clamped to [-1, 1]), radians.
@inlinable
public func arcSine(_ x: Double) -> Double {
    let x = max(-1, min(1, x))
    return arcTangent2(x, (1 - x * x).squareRoot())
}
