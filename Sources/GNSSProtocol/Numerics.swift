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

/// sin(x) for |x| <= pi/4: Taylor polynomial to x^17 (truncation error below 1e-16), by Horner's rule.
@inlinable
func sinKernel(_ x: Double) -> Double {
    let x2 = x * x
    var p = 2.811_457_254_345_520_6e-15  // 1/17!
    p = p * x2 - 7.647_163_731_819_816e-13  // -1/15!
    p = p * x2 + 1.605_904_383_682_161_3e-10  // 1/13!
    p = p * x2 - 2.505_210_838_544_172e-8  // -1/11!
    p = p * x2 + 2.755_731_922_398_589e-6  // 1/9!
    p = p * x2 - 1.984_126_984_126_984e-4  // -1/7!
    p = p * x2 + 8.333_333_333_333_333e-3  // 1/5!
    p = p * x2 - 1.666_666_666_666_666_6e-1  // -1/3!
    return x + x * x2 * p
}

/// cos(x) for |x| <= pi/4: Taylor polynomial to x^18, by Horner's rule.
@inlinable
func cosKernel(_ x: Double) -> Double {
    let x2 = x * x
    var p = -1.561_920_696_858_622_6e-16  // -1/18!
    p = p * x2 + 4.779_477_332_387_385e-14  // 1/16!
    p = p * x2 - 1.147_074_559_772_972_5e-11  // -1/14!
    p = p * x2 + 2.087_675_698_786_81e-9  // 1/12!
    p = p * x2 - 2.755_731_922_398_589e-7  // -1/10!
    p = p * x2 + 2.480_158_730_158_730_2e-5  // 1/8!
    p = p * x2 - 1.388_888_888_888_889e-3  // -1/6!
    p = p * x2 + 4.166_666_666_666_666_4e-2  // 1/4!
    p = p * x2 - 0.5
    return 1 + x2 * p
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
    // (1 - x)(1 + x) keeps its precision near |x| = 1, where 1 - x * x cancels.
    return arcTangent2(x, ((1 - x) * (1 + x)).squareRoot())
}
