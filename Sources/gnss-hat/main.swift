// gnss-hat: the command line. Finds the subcommand, parses its arguments against its spec, runs
// it, and turns what went wrong into one line on standard error and a documented exit status.
import PiHardware

ProcessExit.ignoreBrokenPipe()
let status = await CommandLineTool.run(Array(CommandLine.arguments.dropFirst()))
ProcessExit.exit(status.rawValue)
