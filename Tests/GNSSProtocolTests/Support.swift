// Shared helpers: locating the corpus and the Python oracles, and running a capture through the pipeline.

import Foundation
import GNSSProtocol
import Testing

enum TestPaths {
    /// The package root (two levels above this file).
    static let packageRoot: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The corpus of real captures: `$GNSSHAT_CORPUS`, else the copy in `Tests/Fixtures` (its
    /// `gpsd/` folder is `Tests/Fixtures/gpsd-corpus`).
    static func corpus() throws -> URL {
        if let override = ProcessInfo.processInfo.environment["GNSSHAT_CORPUS"] {
            return URL(fileURLWithPath: override)
        }
        let fixtures = packageRoot.appendingPathComponent("Tests/Fixtures/corpus")
        guard FileManager.default.fileExists(atPath: fixtures.appendingPathComponent("gpsd").path) else {
            throw TestSetupError("corpus not found at \(fixtures.path)/gpsd (or set GNSSHAT_CORPUS)")
        }
        return fixtures
    }

    /// The Python with pyubx2 and pynmeagps: `$GNSSHAT_VENV_PYTHON`, else `.build/venv/bin/python`.
    static func oraclePython() throws -> URL {
        let path =
            ProcessInfo.processInfo.environment["GNSSHAT_VENV_PYTHON"]
            ?? packageRoot.appendingPathComponent(".build/venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestSetupError("oracle venv missing at \(path): run scripts/setup.sh")
        }
        return URL(fileURLWithPath: path)
    }

    static var oracles: URL { packageRoot.appendingPathComponent("Tests/GNSSProtocolTests/Oracles") }
}

struct TestSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A capture without its leading `#` comment lines.
func captureBytes(_ url: URL) throws -> [UInt8] {
    let data = try Data(contentsOf: url)
    var bytes = [UInt8](data)
    var index = 0
    while index < bytes.count && bytes[index] == UInt8(ascii: "#") {
        while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
        index += 1
    }
    bytes.removeFirst(min(index, bytes.count))
    return bytes
}

/// Runs bytes through framer, decoder and assembler.
struct PipelineResult {
    var frames: [Frame] = []
    var messages: [Message] = []
    var decodeErrors: [DecodeError] = []
    var epochs: [Epoch] = []
    var statistics = FramerStatistics()
}

func runPipeline(_ bytes: [UInt8], chunkSize: Int = 4096) -> PipelineResult {
    var result = PipelineResult()
    var framer = Framer()
    var assembler = EpochAssembler()
    var offset = 0
    func drain() {
        while let frame = framer.next() {
            result.frames.append(Frame(kind: frame.kind, bytes: ArraySlice(Array(frame.bytes))))
            do {
                let message = try Message(frame: frame)
                result.messages.append(message)
                result.epochs += assembler.consume(message)
            } catch {
                result.decodeErrors.append(error)
            }
        }
    }
    while offset < bytes.count {
        let end = min(bytes.count, offset + chunkSize)
        framer.append(contentsOf: bytes[offset..<end])
        drain()
        offset = end
    }
    framer.finish()
    drain()
    if let last = assembler.finish() { result.epochs.append(last) }
    result.statistics = framer.statistics
    return result
}

/// A deterministic generator (SplitMix64) so random tests repeat exactly.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
