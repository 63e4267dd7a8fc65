// gnss-hat: the command line. Finds the subcommand, parses its arguments against its spec, runs
// it, and turns what went wrong into one line on standard error and a documented exit status.
import LinuxSystem

ProcessExit.ignoreBrokenPipe()
// One malloc arena: a service of a few mostly idle threads needs no more, and each extra arena
// holds private pages (before any thread starts, so that none gets an arena of its own).
ProcessMemory.useOneHeapArena()
// Tasks run on threads of our own, not libdispatch's: an idle `serve` must not wake up.
do {
    try ThreadExecutors.install()
} catch {
    StandardStream.error.write("gnss-hat: cannot start its threads: \(error)\n")
    ProcessExit.exit(ExitStatus.failure.rawValue)
}
let arguments = Array(CommandLine.arguments.dropFirst())
let status = ThreadExecutors.runMain { await CommandLineTool.run(arguments) }
ProcessExit.exit(status.rawValue)
