// Shared helpers: locating the corpus and the Python oracles, and running a capture through the pipeline.

import Foundation
import GNSSProtocol
import Testing
import TestSupport

extension TestPaths {
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
