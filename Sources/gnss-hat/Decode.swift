// `gnss-hat decode FILE|-`: a capture in, gpsd TPV/SKY JSON lines (or a summary) out.

import GNSSProtocol
import GPSD

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The `decode` subcommand.
enum DecodeCommand {
    static let usage = """
        usage: gnss-hat decode [--summary] FILE|-
          Decodes a receiver capture (NMEA 0183, UBX and RTCM3, mixed; gpsd .log comment headers are skipped)
          and writes gpsd-style TPV and SKY JSON lines, or with --summary a count of frames and errors.
          FILE '-' reads standard input.
        """

    /// Exit codes: 0 done, 1 the input could not be read, 2 bad usage.
    static func run(_ arguments: [String]) -> Int32 {
        var summary = false
        var path: String?
        for argument in arguments {
            switch argument {
            case "--summary": summary = true
            case "-h", "--help":
                writeAll(1, Array((usage + "\n").utf8))
                return 0
            case "-": path = path == nil ? "-" : path
            default:
                if argument.hasPrefix("-") {
                    return usageError("unknown option '\(argument)'")
                }
                guard path == nil else { return usageError("more than one input") }
                path = argument
            }
        }
        guard let path else { return usageError("missing input FILE or '-'") }

        let fd: Int32 = path == "-" ? 0 : open(path, O_RDONLY)
        guard fd >= 0 else {
            writeAll(2, Array("gnss-hat decode: cannot open \(path): \(errorText())\n".utf8))
            return 1
        }
        defer { if fd != 0 { close(fd) } }

        var encoder = GPSDStreamEncoder(countsMessages: summary)
        var headers = HeaderSkipper()
        var input = [UInt8](repeating: 0, count: 64 * 1024)
        var output: [UInt8] = []
        output.reserveCapacity(128 * 1024)
        while true {
            let count = input.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                writeAll(2, Array("gnss-hat decode: reading \(path): \(errorText())\n".utf8))
                return 1
            }
            if count == 0 { break }
            input.withUnsafeBytes { raw in
                let chunk = headers.strip(UnsafeRawBufferPointer(rebasing: raw[0..<count]))
                encoder.append(chunk, to: &output)
            }
            if !summary && output.count >= 64 * 1024 {
                writeAll(1, output)
                output.removeAll(keepingCapacity: true)
            }
        }
        encoder.finish(to: &output)
        if summary {
            writeAll(1, Array(report(encoder, headerBytes: headers.skipped).utf8))
        } else {
            writeAll(1, output)
        }
        return 0
    }

    static func report(_ encoder: GPSDStreamEncoder, headerBytes: Int) -> String {
        let s = encoder.framer.statistics
        var lines: [String] = []
        lines.append("bytes: \(s.bytesReceived + headerBytes) (comment headers \(headerBytes))")
        lines.append("frames: \(s.frames) (NMEA \(s.nmeaFrames), UBX \(s.ubxFrames), RTCM3 \(s.rtcm3Frames))")
        lines.append(
            "errors: \(s.checksumFailures) checksum, \(s.impossibleLengths) impossible length, "
                + "\(s.interruptedSentences) interrupted sentence, \(encoder.decodeErrors) undecodable")
        lines.append("discarded: \(s.bytesDiscarded) bytes, I2C filler: \(s.fillerBytes) bytes")
        let modes = encoder.fixesByMode
        lines.append(
            "epochs: \(encoder.fixes) fixes (3D \(modes[.threeD] ?? 0), 2D \(modes[.twoD] ?? 0), "
                + "no fix \(modes[.noFix] ?? 0)), \(encoder.skyViews) sky views")
        let messages = encoder.messageCounts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        lines.append("messages: " + messages.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        return lines.joined(separator: "\n") + "\n"
    }

    static func usageError(_ message: String) -> Int32 {
        writeAll(2, Array("gnss-hat decode: \(message)\n\(usage)\n".utf8))
        return 2
    }

    static func errorText() -> String {
        guard let text = strerror(errno) else { return "error \(errno)" }
        return String(cString: text)
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
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
