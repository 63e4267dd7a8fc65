// The scenario harness: a scenario is a named async body that throws on failure; the runner
// prints one verdict line per scenario for the guest's /init to relay to the host.
import LinuxSystem

/// One hardware-in-loop scenario: `body` throws a `ScenarioFailure` (or any error) to fail.
struct Scenario: Sendable {
    let name: String
    let body: @Sendable () async throws -> Void

    init(_ name: String, body: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.body = body
    }
}

/// A failed expectation inside a scenario, with the reason shown in the verdict line.
struct ScenarioFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// Names given on the command line that match no scenario.
struct UnknownScenarios: Error {
    let names: [String]
}

/// Fails the running scenario with `message` unless `condition` holds.
func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition {
        throw ScenarioFailure(message())
    }
}

/// The scenarios in their run order, and the runner that reports them.
struct ScenarioRegistry {
    let scenarios: [Scenario]

    init(_ scenarios: [Scenario]) {
        self.scenarios = scenarios
    }

    /// The scenarios named in `names` in registry order, or all of them when `names` is empty.
    func select(_ names: [String]) -> Result<[Scenario], UnknownScenarios> {
        if names.isEmpty {
            return .success(scenarios)
        }
        let known = Set(scenarios.map(\.name))
        let unknown = names.filter { !known.contains($0) }
        if !unknown.isEmpty {
            return .failure(UnknownScenarios(names: unknown))
        }
        return .success(scenarios.filter { names.contains($0.name) })
    }

    /// Runs `selected` one after the other; returns whether all of them passed.
    func run(_ selected: [Scenario]) async -> Bool {
        var allPassed = true
        for scenario in selected {
            do {
                try await scenario.body()
                emit("HIL-CHECK \(scenario.name) PASS")
            } catch {
                allPassed = false
                emit("HIL-CHECK \(scenario.name) FAIL: \(String(describing: error))")
            }
        }
        return allPassed
    }
}

/// Writes one line to standard output unbuffered (`write`, `EINTR` retried), so verdicts survive a
/// crash that follows.
func emit(_ line: String) {
    StandardStream.output.write(line + "\n")
}
