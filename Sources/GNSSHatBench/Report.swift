import Foundation

/// The median of `values` (the upper middle one of an even count; not empty): what each benchmark
/// reports of its runs.
func median(_ values: [Double]) -> Double {
    values.sorted()[values.count / 2]
}

/// Measurement helpers shared by the benchmarks.
enum Bench {
    /// Median of `runs` measurements (the machine is shared and noisy: medians, not means).
    static func median(runs: Int = 5, _ measure: () async throws -> Double) async rethrows -> Double {
        var samples: [Double] = []
        for _ in 0..<runs { samples.append(try await measure()) }
        return GNSSHatBench.median(samples)
    }

    /// Seconds taken by `body`.
    static func seconds(_ body: () async throws -> Void) async rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try await body()
        let elapsed = start.duration(to: clock.now)
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Prints one comparison line: `bench NAME: ours=V UNIT PEER=V UNIT ratio=R target=T`.
    /// `ratio` is ours / peer, with `ratioDigits` decimals (more for a target in thousandths).
    static func report(
        _ name: String, ours: Double, peer: String, peerValue: Double, unit: String, target: String,
        ratioDigits: Int = 2
    ) {
        let ratio = peerValue == 0 ? Double.infinity : ours / peerValue
        print("bench \(name): ours=\(format(ours)) \(unit) \(peer)=\(format(peerValue)) \(unit) "
            + "ratio=\(String(format: "%.\(ratioDigits)f", ratio)) target=\(target)")
    }

    static func format(_ value: Double) -> String {
        switch abs(value) {
        case 0: "0"
        case ..<10: String(format: "%.3f", value)
        case ..<1000: String(format: "%.1f", value)
        default: String(format: "%.0f", value)
        }
    }
}
