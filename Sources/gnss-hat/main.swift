// gnss-hat: subcommand dispatch. The full argument parser comes with the command-line issue; until
// then each subcommand parses its own arguments.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let usage = """
    usage: gnss-hat COMMAND [ARGUMENTS]
    commands:
      decode [--summary] FILE|-   decode a receiver capture into gpsd TPV/SKY JSON lines
      watch [--board NAME] [--demo]   follow a receiver (power, fix, sky); --help for options
      serve [OPTIONS]             a gpsd-compatible service; the receiver is on only while clients watch
    """

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "decode":
    exit(DecodeCommand.run(Array(arguments.dropFirst())))
case "watch": exit(await WatchCommand.run(Array(arguments.dropFirst())))
case "serve": exit(ServeCommand.run(Array(arguments.dropFirst())))
case "-h", "--help", "help":
    print(usage)
    exit(0)
case nil:
    DecodeCommand.writeAll(2, Array((usage + "\n").utf8))
    exit(2)
case let command?:
    DecodeCommand.writeAll(2, Array("gnss-hat: unknown command '\(command)'\n\(usage)\n".utf8))
    exit(2)
}
