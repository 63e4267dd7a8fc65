// `decode`: our framer and decoders against gpsd's gpsdecode and pyubx2's UBXReader, on the same
// deterministic streams, in one run. Environment: GNSSHAT_BENCH_DECODE_MB (size of each stream,
// default 50), GNSSHAT_BENCH_RUNS (runs per figure, median reported, default 3),
// GNSSHAT_BENCH_PYUBX2_MB (prefix pyubx2 decodes, default 2: it runs at about 0.3 MB/s),
// GNSSHAT_BENCH_DECODE_PEERS=0 (ours only, for profiling), GNSSHAT_BENCH_DECODE_STREAMS=nmea,ubx,mixed.

import CMallocCounter
import Foundation
import GNSSProtocol
import GPSDProtocol

enum DecodeBenchmark {
    static let environment = ProcessInfo.processInfo.environment
    static let megabytes = Double(environment["GNSSHAT_BENCH_DECODE_MB"] ?? "") ?? 50
    static let runs = max(1, Int(environment["GNSSHAT_BENCH_RUNS"] ?? "") ?? 3)
    static let pyubx2Megabytes = Double(environment["GNSSHAT_BENCH_PYUBX2_MB"] ?? "") ?? 2
    static let chunk = 64 * 1024

    static func run() async throws {
        let directory = URL(fileURLWithPath: ".build/bench")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let size = Int(megabytes * 1_000_000)
        let streams: [(name: String, make: () -> [UInt8])] = [
            ("nmea", { DecodeStreams.nmea(bytes: size) }),
            ("ubx", { DecodeStreams.ubx(bytes: size) }),
            ("mixed", { DecodeStreams.mixed(bytes: size) }),
        ]
        let selected = environment["GNSSHAT_BENCH_DECODE_STREAMS"]?.split(separator: ",").map(String.init)
        for (name, make) in streams where selected?.contains(name) ?? true {
            let bytes = make()
            let file = directory.appendingPathComponent("decode-\(name).bin")
            try Data(bytes).write(to: file)
            try await compare(name: name, bytes: bytes, file: file)
        }
    }

    static func compare(name: String, bytes: [UInt8], file: URL) async throws {
        let mb = Double(bytes.count) / 1e6
        // Ours: frames decoded into typed messages.
        var summary = TypedSummary()
        let typed = await Bench.median(runs: runs) {
            await Bench.seconds { summary = decodeTyped(bytes) }
        }
        let allocations = allocationsPerFrame(bytes)
        print(
            "decode \(name): \(String(format: "%.1f", mb)) MB, \(summary.frames) frames (NMEA \(summary.nmea), "
                + "UBX \(summary.ubx), RTCM3 \(summary.rtcm3)), \(summary.decodeErrors) undecodable, "
                + "\(summary.discarded) bytes discarded, \(summary.checksumFailures) checksum failures; "
                + "allocations per frame: framer \(String(format: "%.3f", allocations.framer)), typed decode "
                + "\(String(format: "%.3f", allocations.typed)), pipeline with epochs "
                + "\(String(format: "%.3f", allocations.pipeline))")
        // Ours: the `gnss-hat decode` pipeline, gpsd JSON out.
        var jsonBytes = 0
        let json = await Bench.median(runs: runs) {
            await Bench.seconds { jsonBytes = encodeJSON(bytes) }
        }
        if environment["GNSSHAT_BENCH_DECODE_PEERS"] == "0" {
            // Profiling our side only.
            print("decode \(name): ours typed \(Bench.format(mb / typed)) MB/s, json \(Bench.format(mb / json)) MB/s")
            return
        }
        // gpsd's gpsdecode on the same file, JSON to /dev/null.
        let gpsdecode = try await Bench.median(runs: runs) { try runGpsdecode(file) }
        Bench.report(
            "decode.\(name).typed", ours: mb / typed, peer: "gpsdecode", peerValue: mb / gpsdecode,
            unit: "MB/s", target: name == "nmea" ? "15" : "10")
        Bench.report(
            "decode.\(name).typed-messages", ours: Double(summary.frames) / typed, peer: "gpsdecode",
            peerValue: Double(summary.frames) / gpsdecode, unit: "msg/s", target: name == "nmea" ? "15" : "10")
        Bench.report(
            "decode.\(name).json", ours: mb / json, peer: "gpsdecode", peerValue: mb / gpsdecode,
            unit: "MB/s", target: "3")
        // pyubx2 on a prefix of the same file (it is slow; throughput does not depend on the length).
        let prefix = min(bytes.count, Int(pyubx2Megabytes * 1_000_000))
        let pyubx2 = try await Bench.median(runs: runs) { try runPyubx2(file, bytes: prefix) }
        let oursPrefix = await Bench.median(runs: runs) {
            await Bench.seconds { _ = decodeTyped(Array(bytes.prefix(prefix))) }
        }
        Bench.report(
            "decode.\(name).typed-vs-pyubx2", ours: Double(prefix) / 1e6 / oursPrefix, peer: "pyubx2",
            peerValue: Double(prefix) / 1e6 / pyubx2.seconds, unit: "MB/s", target: "-")
        _ = jsonBytes
    }

    struct TypedSummary {
        var frames = 0
        var nmea = 0
        var ubx = 0
        var rtcm3 = 0
        var decodeErrors = 0
        var discarded = 0
        var checksumFailures = 0
        var checksum = 0.0
    }

    /// Framer and decoders: every frame becomes a typed message. A running sum of decoded values keeps
    /// the optimiser from dropping the work.
    static func decodeTyped(_ bytes: [UInt8]) -> TypedSummary {
        var summary = TypedSummary()
        var framer = Framer()
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let end = min(raw.count, offset + chunk)
                framer.append(UnsafeRawBufferPointer(rebasing: raw[offset..<end]))
                offset = end
                if offset == raw.count { framer.finish() }
                while let frame = framer.next() {
                    guard let message = try? Message(frame: frame) else {
                        summary.decodeErrors += 1
                        continue
                    }
                    summary.checksum += value(message)
                }
            }
        }
        let s = framer.statistics
        summary.frames = s.frames
        summary.nmea = s.nmeaFrames
        summary.ubx = s.ubxFrames
        summary.rtcm3 = s.rtcm3Frames
        summary.discarded = s.bytesDiscarded
        summary.checksumFailures = s.checksumFailures
        return summary
    }

    @inline(never)
    static func value(_ message: Message) -> Double {
        switch message {
        case .nmea(.gga(let s)): return s.latitude ?? 0
        case .nmea(.rmc(let s)): return s.speedKnots ?? 0
        case .nmea(.gsv(let s)): return Double(s.satellites.count)
        case .nmea(.gsa(let s)): return s.pdop ?? 0
        case .ubx(.navPVT(let m)): return m.latitude
        case .ubx(.navSAT(let m)): return Double(m.satellites.count)
        default: return 1
        }
    }

    /// The `gnss-hat decode` pipeline (framer, decoders, epoch assembler, gpsd JSON) into a buffer that
    /// is emptied as a writer would; returns the JSON bytes produced.
    static func encodeJSON(_ bytes: [UInt8]) -> Int {
        var encoder = GPSDStreamEncoder()
        var output: [UInt8] = []
        output.reserveCapacity(256 * 1024)
        var produced = 0
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let end = min(raw.count, offset + chunk)
                encoder.append(UnsafeRawBufferPointer(rebasing: raw[offset..<end]), to: &output)
                offset = end
                produced += output.count
                output.removeAll(keepingCapacity: true)
            }
        }
        encoder.finish(to: &output)
        return produced + output.count
    }

    /// Heap allocations per frame, after a warm-up: the framer alone, framer plus typed decoding, and the
    /// whole GNSSDecoder pipeline (which also assembles epochs: their satellite lists allocate).
    static func allocationsPerFrame(_ bytes: [UInt8]) -> (framer: Double, typed: Double, pipeline: Double) {
        let sample = Array(bytes.prefix(8_000_000))
        /// Allocations per frame of `feed` over the sample in chunks, after a warm-up pass (buffers reach
        /// their steady size); `feed` returns the frames a chunk gave.
        func measure(_ feed: (UnsafeRawBufferPointer) -> Int) -> Double {
            func pass() -> Int {
                sample.withUnsafeBytes { raw in
                    var frames = 0
                    var offset = 0
                    while offset < raw.count {
                        let end = min(raw.count, offset + chunk)
                        frames += feed(UnsafeRawBufferPointer(rebasing: raw[offset..<end]))
                        offset = end
                    }
                    return frames
                }
            }
            _ = pass()
            let before = gnsshat_allocation_count()
            let frames = pass()
            return Double(gnsshat_allocation_count() - before) / Double(max(1, frames))
        }
        func framed(decode: Bool) -> Double {
            var framer = Framer()
            return measure { chunk in
                framer.append(chunk)
                var frames = 0
                while let frame = framer.next() {
                    frames += 1
                    if decode, let message = try? Message(frame: frame) { blackHole(value(message)) }
                }
                return frames
            }
        }
        let framerOnly = framed(decode: false)
        let typed = framed(decode: true)
        var decoder = GNSSDecoder()
        let pipeline = measure { chunk in
            decoder.append(chunk)
            var frames = 0
            while let output = decoder.next() {
                switch output {
                case .message(let message):
                    frames += 1
                    blackHole(value(message))
                case .undecodable:
                    frames += 1
                case .epoch(let epoch):
                    blackHole(epoch.fix?.latitude ?? 0)
                case .epochStarted, .provisionalFix:
                    break
                }
            }
            return frames
        }
        return (framerOnly, typed, pipeline)
    }

    @inline(never)
    static func blackHole(_ value: Double) {
        if value.isNaN && value.sign == .minus { print("") }
    }

    struct PeerError: Error, CustomStringConvertible {
        let description: String
    }

    static func runGpsdecode(_ file: URL) throws -> Double {
        let path = "/usr/bin/gpsdecode"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw PeerError(description: "gpsdecode not found (Debian gpsd-tools; scripts/setup.sh installs it)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.standardInput = try FileHandle(forReadingFrom: file)
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        let clock = ContinuousClock()
        let start = clock.now
        try process.run()
        process.waitUntilExit()
        let elapsed = start.duration(to: clock.now)
        guard process.terminationStatus == 0 else {
            throw PeerError(description: "gpsdecode exited with \(process.terminationStatus)")
        }
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static let pyubx2Script = """
        import io, sys, time
        from pyubx2 import UBXReader
        data = open(sys.argv[1], "rb").read(int(sys.argv[2]))
        start = time.perf_counter()
        count = 0
        reader = UBXReader(io.BytesIO(data), protfilter=7, quitonerror=0)
        while True:
            try:
                raw, parsed = reader.read()
            except Exception:  # pyubx2 1.4.0 raises on some corrupted NMEA despite quitonerror=0
                continue
            if raw is None:
                break
            count += 1
        print(len(data), count, time.perf_counter() - start)
        """

    /// pyubx2's UBXReader (NMEA, UBX and RTCM3, errors ignored) over the first `bytes` of the file,
    /// timed inside Python so interpreter start-up is not counted.
    static func runPyubx2(_ file: URL, bytes: Int) throws -> (seconds: Double, messages: Int) {
        guard let python = environment["GNSSHAT_VENV_PYTHON"] ?? Optional(".build/venv/bin/python"),
            FileManager.default.isExecutableFile(atPath: python)
        else { throw PeerError(description: "no oracle venv: run scripts/setup.sh") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", pyubx2Script, file.path, String(bytes)]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let fields = output.split(separator: " ").map { String($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard process.terminationStatus == 0, fields.count == 3, let seconds = Double(fields[2]),
            let messages = Int(fields[1])
        else { throw PeerError(description: "pyubx2 run failed: \(output)") }
        return (seconds, messages)
    }
}

extension Bench {
    /// Median of `runs` measurements that return a pair (the first element is compared).
    static func median(
        runs: Int, _ measure: () async throws -> (seconds: Double, messages: Int)
    ) async rethrows
        -> (seconds: Double, messages: Int)
    {
        var samples: [(seconds: Double, messages: Int)] = []
        for _ in 0..<runs { samples.append(try await measure()) }
        samples.sort { $0.seconds < $1.seconds }
        return samples[samples.count / 2]
    }
}
