// GNSSHatBench [NAME ...]: runs all or the named benchmarks, each side by side with its peer in
// one run, and prints one line per comparison:
//   bench NAME: ours=VALUE UNIT PEER=VALUE UNIT ratio=R target=T
import Foundation

/// Every benchmark, in the order `scripts/bench.sh` runs them.
let benchmarks: [(name: String, summary: String, run: () async throws -> Void)] = [
    ("signal", "RefCountedSignal delivery and subscribe+cancel vs a Mutex array and AsyncStream", SignalBenchmark.run),
    ("decode", "framer + decoders and gnss-hat decode JSON vs gpsd's gpsdecode and pyubx2", DecodeBenchmark.run),
    ("energy", "simulated days of scheduled fixes: energy vs always on, a gpsd device hook, count-only; aided TTFF",
     EnergyBenchmark.run),
    ("service", "gnss-hat serve vs gpsd on the same pty stream: instructions and wake-ups per epoch, latency, memory, CPU", ServiceBenchmark.run),
    ("mqtt", "gnss-hat serve --mqtt vs gpsd + a Python gps/paho bridge: latency to a subscriber, CPU per fix",
     MQTTBenchmark.run),
    ("rtk", "RTK corrections: bytes an NTRIP caster sends in a simulated day, serve --ntrip vs gpsd's ntrip://",
     RTKBenchmark.run),
]

var requested = Array(CommandLine.arguments.dropFirst())
if requested.contains("--help") || requested.contains("-h") {
    print("usage: GNSSHatBench [NAME ...]\n\nbenchmarks:")
    for benchmark in benchmarks { print("  \(benchmark.name.padding(toLength: 10, withPad: " ", startingAt: 0)) \(benchmark.summary)") }
    exit(0)
}
if requested.isEmpty { requested = benchmarks.map(\.name) }
for name in requested where !benchmarks.contains(where: { $0.name == name }) {
    FileHandle.standardError.write(Data("GNSSHatBench: unknown benchmark '\(name)' (known: \(benchmarks.map(\.name).joined(separator: ", ")))\n".utf8))
    exit(2)
}
for benchmark in benchmarks where requested.contains(benchmark.name) {
    do {
        try await benchmark.run()
    } catch {
        FileHandle.standardError.write(Data("GNSSHatBench: \(benchmark.name) failed: \(error)\n".utf8))
        exit(1)
    }
}
