// `gnss-hat decode FILE|-`: a capture in, gpsd TPV/SKY JSON lines (or a summary) out.

import GNSSProtocol
import GPSDProtocol
import LinuxSystem

/// The `decode` subcommand.
enum DecodeCommand: Subcommand {
    static let spec = CommandSpec(
        name: "decode",
        summary: "decode a receiver capture into gpsd TPV/SKY JSON lines (or a summary)",
        arguments: "FILE|-",
        argumentCount: 1...1,
        options: [.flag("summary", "count frames, errors, epochs and messages instead")],
        details: """
            Reads NMEA 0183, UBX and RTCM3, mixed (the '#' comment lines heading a gpsd .log are skipped).
            FILE '-' reads standard input. --board, --linger do not apply.
            example: gnss-hat decode --summary Tests/Fixtures/corpus/gpsd/ublox-8.log
            """
    )

    static func run(_ arguments: ParsedArguments) async throws {
        let summary = arguments.flag("summary")
        let path = arguments.arguments[0]
        let file: InputFile
        do {
            file = try InputFile(path: path)
        } catch {
            throw CommandFailure(.failure, "cannot open \(path): \(error.failure.errno.map { "\($0)" } ?? "failed")")
        }
        defer { file.close() }

        var encoder = GPSDStreamEncoder(countsMessages: summary)
        var headers = HeaderSkipper()
        var input = [UInt8](repeating: 0, count: 64 * 1024)
        var output: [UInt8] = []
        output.reserveCapacity(128 * 1024)
        while true {
            let count: Int
            do {
                count = try file.read(into: &input)
            } catch {
                throw CommandFailure(.failure, "reading \(path): \(error)")
            }
            if count == 0 { break }
            input.withUnsafeBytes { raw in
                let chunk = headers.strip(UnsafeRawBufferPointer(rebasing: raw[0..<count]))
                encoder.append(chunk, to: &output)
            }
            if !summary && output.count >= 64 * 1024 {
                StandardStream.output.write(output)
                output.removeAll(keepingCapacity: true)
            }
        }
        encoder.finish(to: &output)
        if summary {
            StandardStream.output.write(report(encoder, headerBytes: headers.skipped))
        } else {
            StandardStream.output.write(output)
        }
    }

    static func report(_ encoder: GPSDStreamEncoder, headerBytes: Int) -> String {
        let statistics = encoder.statistics
        let s = statistics.framer
        var lines: [String] = []
        lines.append("bytes: \(s.bytesReceived + headerBytes) (comment headers \(headerBytes))")
        lines.append("frames: \(s.frames) (NMEA \(s.nmeaFrames), UBX \(s.ubxFrames), RTCM3 \(s.rtcm3Frames))")
        lines.append(
            "errors: \(s.checksumFailures) checksum, \(s.impossibleLengths) impossible length, "
                + "\(s.interruptedSentences) interrupted sentence, \(statistics.decodeErrors) undecodable")
        lines.append("discarded: \(s.bytesDiscarded) bytes, I2C filler: \(s.fillerBytes) bytes")
        let modes = encoder.fixesByMode
        lines.append(
            "epochs: \(statistics.fixes) fixes (3D \(modes[.threeD] ?? 0), 2D \(modes[.twoD] ?? 0), "
                + "no fix \(modes[.noFix] ?? 0)), \(statistics.skyViews) sky views")
        let messages = encoder.messageCounts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        lines.append("messages: " + messages.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        return lines.joined(separator: "\n") + "\n"
    }
}

/// Drops the `#` comment lines that start a gpsd `.log` capture, across chunk boundaries.
struct HeaderSkipper {
    private var inHeader = true
    private var inComment = false
    private var atLineStart = true
    private(set) var skipped = 0

    mutating func strip(_ chunk: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        guard inHeader else { return chunk }
        var index = 0
        while index < chunk.count {
            let byte = chunk[index]
            if inComment {
                if byte == UInt8(ascii: "\n") {
                    inComment = false
                    atLineStart = true
                }
            } else if atLineStart && byte == UInt8(ascii: "#") {
                inComment = true
                atLineStart = false
            } else {
                inHeader = false
                skipped += index
                return UnsafeRawBufferPointer(rebasing: chunk[index...])
            }
            index += 1
        }
        skipped += chunk.count
        return UnsafeRawBufferPointer(start: nil, count: 0)
    }
}
