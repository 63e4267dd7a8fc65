// The elementary functions GNSSProtocol carries (it may not import Glibc) against the C library's.

import Foundation
import GNSSProtocol
import Testing

@Suite("Numerics")
struct NumericsTests {
    @Test("sine, cosine, arc tangent and arc sine agree with libm to 1e-15")
    func accuracy() {
        var random = SeededGenerator(seed: 99)
        for _ in 0..<100_000 {
            let x = Double.random(in: -20...20, using: &random)
            #expect(abs(sine(x) - sin(x)) < 1e-15)
            #expect(abs(cosine(x) - cos(x)) < 1e-15)
            let y = Double.random(in: -1000...1000, using: &random)
            #expect(abs(arcTangent2(y, x) - atan2(y, x)) < 1e-15)
            let z = Double.random(in: -1...1, using: &random)
            #expect(abs(arcSine(z) - asin(z)) < 1e-14)
        }
    }

    @Test("ECEF to geodetic round-trips within a millimetre")
    func geodetic() {
        // u-blox NEO-M8T at Bend, OR (the ublox-neo-m8t capture): ECEF in metres.
        let position = WGS84.geodetic(x: -2_386_071.06, y: -3_922_190.51, z: 4_414_360.73)
        #expect(abs(position.latitude - 44.068809596) < 1e-8)
        #expect(abs(position.longitude - -121.314309171) < 1e-8)
        #expect(abs(position.height - 1110.6751) < 1e-3)
    }

    @Test("numbers print like printf %.*f")
    func formatting() {
        for (value, decimals) in [(44.068897833, 9), (-121.314271333, 9), (0.0, 3), (-0.0004, 3), (1123.4, 4),
                                  (0.015, 3), (359.99, 2), (1e17, 1), (12.5, 0)] {
            #expect(ASCII.fixed(value, decimals: decimals) == String(format: "%.\(decimals)f", value), "\(value)")
        }
    }

    @Test("the two-digits-at-a-time writer writes what the digit-by-digit one did, every width and carry")
    func fixedMatchesDigitByDigit() {
        var random = SeededGenerator(seed: 2026)
        var values: [Double] = [0, -0.0, 0.5, 1, 9.5, 9.996, 99.995, 0.0049, -0.0051, 1e15, 8.9e17, 123_456.789]
        for power in -6...17 {
            let ten = pow(10.0, Double(power))
            values += [ten, ten.nextDown, ten.nextUp, -ten, ten * 9.999_999]
        }
        for _ in 0..<5_000 {
            let magnitude = pow(10.0, Double.random(in: -8...12, using: &random))
            values.append(Double.random(in: -magnitude...magnitude, using: &random))
        }
        for value in values {
            for decimals in 0...15 {
                #expect(ASCII.fixed(value, decimals: decimals) == Self.digitByDigit(value, decimals: decimals),
                        "\(value) with \(decimals) decimals")
            }
        }
    }

    @Test("integers are written as Swift prints them, every digit count and both signs")
    func integers() {
        var values = [0, 9, 10, 99, 100, -1, -10, Int.max, Int.min]
        var ten = 1
        for _ in 1...18 {
            ten *= 10
            values += [ten - 1, ten, -ten, -(ten - 1)]
        }
        var random = SeededGenerator(seed: 7)
        for _ in 0..<2_000 { values.append(Int.random(in: Int.min...Int.max, using: &random)) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            for value in values {
                let count = ASCII.writeInt(value, to: buffer.baseAddress!)
                #expect(String(decoding: UnsafeBufferPointer(rebasing: buffer[..<count]), as: UTF8.self)
                        == String(value))
            }
        }
    }

    /// The writer as it was before digit pairs: the same rounding, one division by ten per digit.
    static func digitByDigit(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "0" }
        let scaled = (abs(value) * pow(10.0, Double(decimals))).rounded(.toNearestOrEven)
        guard scaled < 9.0e18 else { return "\(value)" }
        var integer = UInt64(scaled)
        var digits: [UInt8] = []
        for _ in 0..<decimals {
            digits.append(UInt8(ascii: "0") + UInt8(integer % 10))
            integer /= 10
        }
        if decimals > 0 { digits.append(UInt8(ascii: ".")) }
        repeat {
            digits.append(UInt8(ascii: "0") + UInt8(integer % 10))
            integer /= 10
        } while integer > 0
        if value.sign == .minus { digits.append(UInt8(ascii: "-")) }
        return String(decoding: digits.reversed(), as: UTF8.self)
    }
}
