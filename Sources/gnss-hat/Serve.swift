// `gnss-hat serve`: the gpsd-compatible service on a board, its receiver powered only while
// clients watch. Minimal argument handling of its own; the command-line issue brings the parser.

import GNSSHat
import GPSD
import PiHardware

#if canImport(Glibc)
import Glibc
#endif

/// The `serve` subcommand.
enum ServeCommand {
    static let usage = """
        usage: gnss-hat serve [OPTIONS]
          Speaks gpsd's JSON protocol (gpspipe, cgps, python3-gps, chrony, ...) for one board, powering
          the receiver on for the first watching client and off after the last one leaves.
          --board NAME|PATH        board (default: simulator)
          --listen ADDR:PORT       TCP address, repeatable (default: 127.0.0.1:2947; [::1]:2947 for IPv6)
          --unix PATH              also listen on a Unix socket
          --linger SECONDS         keep the receiver on this long after the last watcher (default: 5)
          --min-off SECONDS        keep it off at least this long between sessions (default: the board's)
          --keep-on                keep the receiver on with no watcher (time service)
          --allow-device-changes   let ?DEVICE= change the receiver (default: read-only)
          --chrony-socket PATH     feed chrony's SOCK refclock at PATH with the serial time (keeps it on)
          --chrony-pps-socket PATH feed chrony's SOCK refclock at PATH with PPS edges (keeps it on)
          --early-position         publish a TPV as soon as an epoch's position is known
          --verbose                log clients, power and errors to standard error
        exit status: 0 stopped by SIGTERM or SIGINT, 1 the service could not start, 2 bad usage
        """

    struct Options {
        var board = BoardCatalog.defaultBoardName
        var listen: [SocketAddress] = []
        var linger: Duration = .seconds(5)
        var minimumOff: Duration?
        var keepOn = false
        var allowDeviceChanges = false
        var chronySocket: String?
        var chronyPPSSocket: String?
        var earlyPosition = false
        var verbose = false
    }

    enum UsageError: Error {
        case message(String)
        case help
    }

    static func parse(_ arguments: [String]) throws(UsageError) -> Options {
        var options = Options()
        var rest = arguments[...]
        func value(_ option: String) throws(UsageError) -> String {
            guard let value = rest.popFirst() else { throw .message("\(option) needs a value") }
            return value
        }
        func seconds(_ option: String) throws(UsageError) -> Duration {
            let text = try value(option)
            guard let number = Double(text), number.isFinite, number >= 0, number < 1e9 else {
                throw .message("\(option) needs a number of seconds, not '\(text)'")
            }
            return .milliseconds(Int64((number * 1000).rounded()))
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--board": options.board = try value(argument)
            case "--listen":
                let text = try value(argument)
                do {
                    options.listen.append(try SocketAddress(parsing: text, defaultPort: 2947))
                } catch {
                    throw .message("--listen: \(error)")
                }
            case "--unix": options.listen.append(.unix(try value(argument)))
            case "--linger": options.linger = try seconds(argument)
            case "--min-off": options.minimumOff = try seconds(argument)
            case "--keep-on": options.keepOn = true
            case "--allow-device-changes": options.allowDeviceChanges = true
            case "--chrony-socket": options.chronySocket = try value(argument)
            case "--chrony-pps-socket": options.chronyPPSSocket = try value(argument)
            case "--early-position": options.earlyPosition = true
            case "--verbose", "-v": options.verbose = true
            case "-h", "--help": throw .help
            default: throw .message("unknown option '\(argument)'")
            }
        }
        if !options.listen.contains(where: { $0.port != nil }) {
            options.listen.insert(.ipv4("127.0.0.1", port: 2947), at: 0)
        }
        return options
    }

    static func run(_ arguments: [String]) -> Int32 {
        let options: Options
        do {
            options = try parse(arguments)
        } catch {
            switch error {
            case .help:
                print(usage)
                return 0
            case .message(let text):
                standardError("gnss-hat serve: \(text)\n\(usage)")
                return 2
            }
        }
        // Handle SIGTERM and SIGINT before any thread starts, so none of them dies of it.
        let signals: SignalWatcher
        do {
            signals = try SignalWatcher()
        } catch {
            standardError("gnss-hat serve: cannot handle signals: \(error)")
            return 1
        }
        let verbose = options.verbose
        let log: @Sendable (String) -> Void = { line in if verbose { standardError("gnss-hat serve: \(line)") } }
        let server: GPSDServer
        do {
            var board = try BoardCatalog.load(options.board)
            if let minimumOff = options.minimumOff { board.power.minimumOffTime = minimumOff }
            let receiver = try Receiver(board: board, options: ReceiverOptions(linger: options.linger))
            let source = GPSDSource.receiver(
                receiver, options: ReceiverReportOptions(earlyPosition: options.earlyPosition))
            server = try GPSDServer(source: source, configuration: GPSDServerConfiguration(
                listen: options.listen,
                allowDeviceChanges: options.allowDeviceChanges,
                keepOn: options.keepOn,
                chronySocket: options.chronySocket,
                chronyPPSSocket: options.chronyPPSSocket,
                log: log
            ))
            standardError("gnss-hat serve: board \(board.name), device \(source.device.path), listening on "
                + server.addresses.map(\.description).joined(separator: ", "))
        } catch {
            standardError("gnss-hat serve: \(error)")
            return 1
        }
        do {
            try server.run(signals: signals)
        } catch {
            standardError("gnss-hat serve: \(error)")
            return 1
        }
        standardError("gnss-hat serve: stopped; receiver off")
        return 0
    }

    static func standardError(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            guard written > 0 else { return }
            offset += written
        }
    }
}
