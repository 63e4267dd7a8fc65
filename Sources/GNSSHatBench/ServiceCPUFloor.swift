// The floor of the service benchmark's UBX CPU time: a service that does the least an early TPV and an
// epoch's end need. It runs as a process of its own (this program, `GNSSHatBench --ubx-cpu-floor`) in
// ours's place, on the same stream, at nice -10 and with one watching client, so that the bench measures
// its CPU time and switches exactly as it measures both services'. Blocked in read(2) on its
// pseudo-terminal until NAV-PVT comes, it sends a TPV at once (a fixed line with the epoch's time written
// in, as long as ours's); then it sleeps in clock_nanosleep(2) as long as the bench says (it knows the
// stream), reads until the epoch's last frame (NAV-TIMEUTC) is whole, and sends one TPV and a SKY with a
// row per satellite of NAV-SAT (fixed text, the length of ours's). No decoding beyond finding the frames,
// no JSON writer, no checksums, one thread. The bench places the sleep's end two ways: 2 ms past the
// latest any epoch's last frame is due (the late floor: two wake-ups an epoch, the rest of the epoch in
// one read, its end's reports that much late), and half a millisecond before the earliest (the punctual
// floor: a third wake-up, for the last frame as it comes, as a service that reports the end at once
// needs). What any service pays per epoch to do the same through this kernel (wake-ups, reads, two
// sends to a TCP client over loopback) is what this one measures; against gpsd's CPU time in the same
// run, it says how far under gpsd a service's CPU time can go on this machine. A third placement, the
// decoding floor (`decode`), sleeps as the punctual one but decodes the stream with GNSSProtocol's
// decoder and writes its reports with GPSD's encoder: ours's own decoding and JSON, nothing around them.

import Foundation
import GNSSProtocol
import GPSDProtocol
import LinuxSystem

enum ServiceCPUFloor {
    /// The argument that runs this program as the floor instead of the benchmarks.
    static let flag = "--ubx-cpu-floor"

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// `GNSSHatBench --ubx-cpu-floor TTY PORT END-MICROSECONDS [decode]` (the sleep from NAV-PVT; `decode`:
    /// the decoding floor): serves until killed or the terminal hangs up.
    static func main(_ arguments: [String]) -> Never {
        do {
            guard arguments.count == 3 || arguments.count == 4 && arguments[3] == "decode",
                  let port = UInt16(arguments[1]), let end = Int(arguments[2])
            else {
                throw Failure(description: "usage: GNSSHatBench \(flag) TTY PORT END-MICROSECONDS [decode]")
            }
            try serve(terminal: arguments[0], port: port, endAfter: .microseconds(end), decoding: arguments.count == 4)
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("GNSSHatBench \(flag): \(error)\n".utf8))
            exit(1)
        }
    }

    static func serve(terminal: String, port: UInt16, endAfter: Duration, decoding: Bool) throws {
        // On Linux a nice value is a thread's: 0 names the calling thread (both services run at -10).
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, -10)
        let device = open(terminal, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard device >= 0 else { throw Failure(description: "cannot open \(terminal): errno \(errno)") }
        defer { close(device) }
        let listener = try SocketListener(address: .ipv4("127.0.0.1", port: port))
        var accepted: SocketConnection?
        while accepted == nil {
            accepted = try listener.accept()
            if accepted == nil { usleep(5000) }
        }
        guard let client = accepted else { return }
        listener.close()
        // The bench's client asks to watch and waits for the WATCH line.
        var request: [UInt8] = []
        while !String(decoding: request, as: UTF8.self).contains("?WATCH") {
            request += try client.receive(timeout: .seconds(10))
        }
        try client.sendAll(Array("{\"class\":\"WATCH\",\"enable\":true,\"json\":true}\r\n".utf8))
        if decoding {
            try serveDecoded(device, to: client, name: terminal, endAfter: endAfter)
            return
        }

        var buffer = [UInt8](repeating: 0, count: 4096)
        var line: [UInt8] = []
        line.reserveCapacity(8192)
        var held: [UInt8] = []
        while true {
            // Asleep until NAV-PVT comes.
            guard let count = readSome(device, &buffer), count > 0 else { return }
            held += buffer[..<count]
            guard let time = navPVTTime(held) else {
                if held.count > 2048 { held.removeAll(keepingCapacity: true) }
                continue
            }
            held.removeAll(keepingCapacity: true)
            var wake = timespec()
            clock_gettime(CLOCK_MONOTONIC, &wake)
            line.removeAll(keepingCapacity: true)
            appendTPV(time: time, to: &line)
            try client.sendAll(line)
            // Asleep until the bench's moment, then reads until the epoch's end is whole.
            sleep(for: endAfter, from: wake)
            var satellites: Int?
            while true {
                guard let count = readSome(device, &buffer), count > 0 else { return }
                held += buffer[..<count]
                if satellites == nil { satellites = navSATCount(held) }
                // The epoch ends with NAV-TIMEUTC (class 1, id 0x21), once it is whole.
                if let start = frameStart(held, id: 0x21), held.count >= start + 6,
                   held.count >= start + 8 + (Int(held[start + 4]) | Int(held[start + 5]) << 8) { break }
            }
            held.removeAll(keepingCapacity: true)
            line.removeAll(keepingCapacity: true)
            appendTPV(time: time, to: &line)
            appendSKY(time: time, satellites: satellites ?? 0, to: &line)
            try client.sendAll(line)
        }
    }

    /// The decoding floor: the epochs decoded by GNSSProtocol's `GNSSDecoder` (provisional fixes on, as
    /// `--early-position` has them) and their reports written by GPSDProtocol's `GPSDReport`, what ours's service
    /// runs, without its session, signals, pacer or client queues. A provisional fix's TPV goes out at
    /// once, then the thread sleeps `endAfter` from the read that brought it; an epoch's TPV and SKY go out
    /// in one send as it ends.
    private static func serveDecoded(_ device: CInt, to client: SocketConnection, name: String,
                                     endAfter: Duration) throws {
        var decoder = GNSSDecoder(options: GNSSDecoder.Options(provisionalFixes: true))
        var buffer = [UInt8](repeating: 0, count: 4096)
        var line: [UInt8] = []
        line.reserveCapacity(8192)
        while true {
            guard let count = readSome(device, &buffer), count > 0 else { return }
            var wake = timespec()
            clock_gettime(CLOCK_MONOTONIC, &wake)
            buffer.withUnsafeBytes { decoder.append(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            var pause = false
            while let output = decoder.next() {
                switch output {
                case .provisionalFix(let fix):
                    line.removeAll(keepingCapacity: true)
                    GPSDReport.appendTPV(fix, device: name, to: &line)
                    try client.sendAll(line)
                    pause = true
                case .epoch(let epoch):
                    line.removeAll(keepingCapacity: true)
                    if let fix = epoch.fix { GPSDReport.appendTPV(fix, device: name, to: &line) }
                    if let sky = epoch.sky { GPSDReport.appendSKY(sky, device: name, to: &line) }
                    if !line.isEmpty { try client.sendAll(line) }
                case .message, .undecodable, .epochStarted:
                    break
                }
            }
            guard pause else { continue }
            sleep(for: endAfter, from: wake)
        }
    }

    /// Sleeps in clock_nanosleep(2) until `duration` after `start` (CLOCK_MONOTONIC).
    private static func sleep(for duration: Duration, from start: timespec) {
        var wake = start
        let after = duration.components
        wake.tv_nsec += Int(after.attoseconds / 1_000_000_000)
        wake.tv_sec += Int(after.seconds) + wake.tv_nsec / 1_000_000_000
        wake.tv_nsec %= 1_000_000_000
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nil) == EINTR {}
    }

    /// One read(2) into `buffer`: its count, or nil on an error other than EINTR.
    private static func readSome(_ device: CInt, _ buffer: inout [UInt8]) -> Int? {
        while true {
            let count = buffer.withUnsafeMutableBytes { read(device, $0.baseAddress, $0.count) }
            if count >= 0 { return count }
            if errno != EINTR { return nil }
        }
    }

    /// Where the UBX frame of class 1 and `id` starts in `bytes`.
    private static func frameStart(_ bytes: [UInt8], id: UInt8) -> Int? {
        var index = 0
        while index + 4 <= bytes.count {
            if bytes[index] == 0xB5 && bytes[index + 1] == 0x62 && bytes[index + 2] == 0x01 && bytes[index + 3] == id {
                return index
            }
            index += 1
        }
        return nil
    }

    /// NAV-PVT's UTC time as gpsd writes it ("2024-05-17T00:00:12.300Z"), once its 100 bytes are in.
    private static func navPVTTime(_ bytes: [UInt8]) -> [UInt8]? {
        guard let start = frameStart(bytes, id: 0x07), bytes.count >= start + 100 else { return nil }
        let p = start + 6
        let year = Int(bytes[p + 4]) | Int(bytes[p + 5]) << 8
        let nano = Int32(bitPattern: UInt32(bytes[p + 16]) | UInt32(bytes[p + 17]) << 8
            | UInt32(bytes[p + 18]) << 16 | UInt32(bytes[p + 19]) << 24)
        var time: [UInt8] = []
        func digits(_ value: Int, _ count: Int, then separator: Unicode.Scalar) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                time.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
            time.append(UInt8(ascii: separator))
        }
        digits(year, 4, then: "-")
        digits(Int(bytes[p + 6]), 2, then: "-")
        digits(Int(bytes[p + 7]), 2, then: "T")
        digits(Int(bytes[p + 8]), 2, then: ":")
        digits(Int(bytes[p + 9]), 2, then: ":")
        digits(Int(bytes[p + 10]), 2, then: ".")
        digits(max(0, (Int(nano) + 500_000) / 1_000_000), 3, then: "Z")
        return time
    }

    /// NAV-SAT's satellite count (payload byte 5), once its header is in.
    private static func navSATCount(_ bytes: [UInt8]) -> Int? {
        guard let start = frameStart(bytes, id: 0x35), bytes.count >= start + 12 else { return nil }
        return Int(bytes[start + 6 + 5])
    }

    // The fixed parts of the lines, made once: a TPV of ours's length for this stream (about 370 bytes)
    // and a SKY row of ours's (about 100 bytes).
    private static let tpvHead = Array("{\"class\":\"TPV\",\"device\":\"/dev/pts/0\",\"mode\":3,\"time\":\"".utf8)
    private static let tpvTail = Array(("\",\"leapseconds\":18,\"ept\":0.005,\"lat\":47.397742000,\"lon\":8.545594000,"
        + "\"altHAE\":467.1000,\"altMSL\":488.5000,\"alt\":488.5000,\"epx\":1.234,\"epy\":1.234,"
        + "\"epv\":2.345,\"track\":123.4000,\"speed\":1.234,\"climb\":0.000,\"eps\":2.47,\"epc\":4.69,"
        + "\"velN\":-0.689,\"velE\":1.024,\"velD\":0.000,\"geoidSep\":21.400,\"eph\":1.745,"
        + "\"sep\":2.901}\r\n").utf8)
    private static let skyHead = Array("{\"class\":\"SKY\",\"device\":\"/dev/pts/0\",\"time\":\"".utf8)
    private static let skyDOPs = Array(("\",\"gdop\":1.50,\"hdop\":0.78,\"pdop\":1.31,\"tdop\":0.80,\"vdop\":1.05,"
        + "\"nSat\":30,\"uSat\":20,\"satellites\":[").utf8)
    private static let skyRow = Array(("{\"PRN\":12,\"gnssid\":0,\"svid\":12,\"az\":123.0,\"el\":45.0,"
        + "\"prRes\":1.2,\"qual\":7,\"ss\":42.0,\"used\":true}").utf8)
    private static let skyTail = Array("]}\r\n".utf8)

    private static func appendTPV(time: [UInt8], to line: inout [UInt8]) {
        line += tpvHead
        line += time
        line += tpvTail
    }

    /// A SKY with `satellites` rows, with CR LF.
    private static func appendSKY(time: [UInt8], satellites: Int, to line: inout [UInt8]) {
        line += skyHead
        line += time
        line += skyDOPs
        for index in 0..<satellites {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            line += skyRow
        }
        line += skyTail
    }
}
