// gnss-hat-hil: the scenario runner of the emulated hardware-in-loop rig (scripts/hil/run.sh).
//
// Built as a fully static executable, once per libgpiod API, and run by the guest's /init
// inside QEMU, next to the simulation modules (gnss_gpio_sim, ubx_ddc_sim). Contract with
// the init script (scripts/hil/README.md):
//   gnss-hat-hil --list        prints every scenario name, one per line
//   gnss-hat-hil [NAME...]     runs the named scenarios (all when none is given), prints one
//                              `HIL-CHECK <name> PASS|FAIL[: detail]` line per scenario and
//                              exits 0 when all passed, 1 when one failed, 2 on bad usage.
import LinuxSystem

let arguments = Array(CommandLine.arguments.dropFirst())
let registry = ScenarioRegistry(scenarios)

if arguments == ["--list"] {
    for scenario in registry.scenarios {
        emit(scenario.name)
    }
    ProcessExit.exit(0)
}
if let option = arguments.first(where: { $0.hasPrefix("-") }) {
    emit("gnss-hat-hil: unknown option \(option); usage: gnss-hat-hil [--list | NAME...]")
    ProcessExit.exit(2)
}
let selected: [Scenario]
switch registry.select(arguments) {
case .success(let found):
    selected = found
case .failure(let unknown):
    emit("gnss-hat-hil: no scenario named \(unknown.names.joined(separator: ", "))")
    ProcessExit.exit(2)
}
let allPassed = await registry.run(selected)
ProcessExit.exit(allPassed ? 0 : 1)
