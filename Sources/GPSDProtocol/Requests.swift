// Client requests: splitting a connection's bytes into requests, and reading each one.
//
// gpsd requests start with `?`, end with `;` and are at most 80 characters: `?VERSION;`,
// `?DEVICES;`, `?WATCH;`, `?WATCH={"enable":true,"json":true};`, `?POLL;`, `?DEVICE;`,
// `?DEVICE={"path":"/dev/ttyS0","cycle":0.5};`. Clients send them with or without a newline, several
// in one packet, or one split across packets.

/// The longest request gpsd's protocol allows (`gpsd_json.adoc`: "at most 80 characters").
package let maxRequestLength = 80

/// Splits a client's byte stream into requests. A request ends at `;`, at the end of a line, or at
/// the `}` closing its JSON argument; bytes that do not start a request (`garbage;`) are skipped up
/// to the end of their line, as gpsd ignores them. A request still going after 80 characters is
/// reported once and skipped up to the next `;` or end of line, however the bytes were split.
package struct RequestScanner {
    /// One unit the scanner found.
    package enum Item: Equatable {
        /// A request's text, from `?` up to (not including) its terminator.
        case request(ArraySlice<UInt8>)
        /// More than ``maxRequestLength`` characters without the request ending; they are dropped
        /// up to the next `;` or end of line.
        case tooLong
    }

    private var buffer: [UInt8] = []
    /// Dropping bytes up to the next end of line (after garbage).
    private var skippingLine = false
    /// Dropping bytes up to the next `;` or end of line (after an over-long request).
    private var skippingRequest = false

    /// Bytes waiting for the rest of a request.
    package var pendingCount: Int { buffer.count }

    package init() {}

    package mutating func append(_ bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete request, or `nil` when more bytes are needed.
    package mutating func next() -> Item? {
        while true {
            if skippingRequest {
                guard let end = buffer.firstIndex(where: { $0 == UInt8(ascii: ";") || $0 == UInt8(ascii: "\n") }) else {
                    buffer.removeAll(keepingCapacity: true)
                    return nil
                }
                buffer.removeSubrange(...end)
                skippingRequest = false
            }
            if skippingLine {
                guard let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) else {
                    buffer.removeAll(keepingCapacity: true)
                    return nil
                }
                buffer.removeSubrange(...newline)
                skippingLine = false
            }
            // Separators between requests.
            let start = buffer.firstIndex { !RequestObjectReader.isSpace($0) && $0 != UInt8(ascii: ";") }
            guard let start else {
                buffer.removeAll(keepingCapacity: true)
                return nil
            }
            if start > 0 { buffer.removeSubrange(..<start) }
            guard buffer[0] == UInt8(ascii: "?") else {
                skippingLine = true
                continue
            }
            switch findEnd() {
            case .complete(let end, let consumed):
                let request = Array(buffer[0..<end])
                buffer.removeSubrange(..<consumed)
                return .request(request[...])
            case .incomplete:
                return nil
            case .tooLong:
                buffer.removeSubrange(..<(maxRequestLength + 1))
                skippingRequest = true
                return .tooLong
            }
        }
    }

    private enum End {
        /// The request is `buffer[0..<end]`; `consumed` bytes (terminator included) are used up.
        case complete(end: Int, consumed: Int)
        case incomplete
        /// No end within ``maxRequestLength`` characters.
        case tooLong
    }

    private func findEnd() -> End {
        var depth = 0
        var inString = false
        var escaped = false
        var index = 1
        while index < buffer.count {
            // A request of exactly 80 characters may still have its terminator at index 80.
            if index > maxRequestLength { return .tooLong }
            let byte = buffer[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                } else if byte == UInt8(ascii: "\n") {
                    return .complete(end: trimmed(index), consumed: index + 1)
                }
                index += 1
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 && byte == UInt8(ascii: "}") {
                    return .complete(end: index + 1, consumed: index + 1)
                }
            case UInt8(ascii: ";") where depth <= 0:
                return .complete(end: index, consumed: index + 1)
            case UInt8(ascii: "\n"):
                return .complete(end: trimmed(index), consumed: index + 1)
            default:
                break
            }
            index += 1
        }
        return .incomplete
    }

    /// `end` moved back over a carriage return before a newline.
    private func trimmed(_ end: Int) -> Int {
        end > 0 && buffer[end - 1] == UInt8(ascii: "\r") ? end - 1 : end
    }
}

/// A client's standing instructions, gpsd's `struct gps_policy_t`, as `?WATCH` sets them.
public struct WatchPolicy: Equatable, Sendable {
    /// The client watches (gpsd's `watcher`): it holds one subscription, so the receiver is on.
    public var enable = false
    /// TPV, SKY, DEVICE and PPS objects.
    public var json = false
    /// NMEA sentences as the receiver sent them.
    public var nmea = false
    /// 1: textual sentences as sent and binary frames as hex; 2: every frame as sent.
    public var raw = 0
    public var scaled = false
    public var timing = false
    public var split24 = false
    /// PPS and TOFF objects.
    public var pps = false
    /// Watch only this device path (`nil`: every device).
    public var device: String?
    /// GNSSHat's extension, `"interval":SECONDS`: the client needs a TPV at least this often, and
    /// the receiver may save power in between (a duty cycle, its own power save); such a client gets
    /// one TPV per interval and no SKY. `nil` (gpsd's behaviour): every epoch.
    public var interval: Duration?
    /// GNSSHat's extension, `"accuracy":METRES`: the client needs fixes this accurate (gpsd's `eph`); at or
    /// below the board's RTK threshold the receiver takes corrections while the client watches. `nil`: none.
    public var accuracy: Double?

    public init() {}

    /// Applies a `?WATCH=` object with gpsd's defaults for omitted attributes: `enable` becomes true,
    /// `json`, `nmea` and `raw` keep their values, `scaled`, `timing`, `split24`, `pps` and `device`
    /// are reset. Unknown attributes are ignored (gpsd ignores them for cross-version use). Nothing
    /// changes when an attribute has the wrong type.
    package func applying(_ attributes: [(name: String, value: RequestValue)]) throws(RequestJSONError) -> WatchPolicy {
        var policy = self
        policy.enable = true
        policy.scaled = false
        policy.timing = false
        policy.split24 = false
        policy.pps = false
        policy.device = nil
        policy.interval = nil
        policy.accuracy = nil
        for (name, value) in attributes {
            switch name {
            case "enable": policy.enable = try value.bool()
            case "json": policy.json = try value.bool()
            case "nmea": policy.nmea = try value.bool()
            case "raw": policy.raw = try value.int()
            case "scaled": policy.scaled = try value.bool()
            case "timing": policy.timing = try value.bool()
            case "split24": policy.split24 = try value.bool()
            case "pps": policy.pps = try value.bool()
            case "device":
                let path = try value.string()
                policy.device = path.isEmpty ? nil : path
            case "interval":
                // 0 (or less): every epoch, as without it; at most a day.
                let seconds = min(try value.double(), 86_400)
                let milliseconds = seconds.isFinite && seconds > 0 ? Int64((seconds * 1000).rounded()) : 0
                policy.interval = milliseconds > 0 ? .milliseconds(milliseconds) : nil
            case "accuracy":
                // Metres, from 1 mm to 100 km; anything else (0, negative): no accuracy asked.
                let metres = try value.double()
                policy.accuracy = metres.isFinite && metres >= 0.001 ? min(metres, 100_000) : nil
            case "remote", "class":
                _ = value
            default:
                continue
            }
        }
        return policy
    }
}

/// A `?DEVICE=` object: the device to select and the changes asked for (`nil`: leave as is).
public struct DeviceChange: Equatable, Sendable {
    public var path: String?
    public var bps: Int?
    public var parity: String?
    public var stopbits: Int?
    public var native: Int?
    /// Seconds per navigation solution.
    public var cycle: Double?

    public init(path: String? = nil, bps: Int? = nil, parity: String? = nil, stopbits: Int? = nil, native: Int? = nil,
                cycle: Double? = nil) {
        self.path = path
        self.bps = bps
        self.parity = parity
        self.stopbits = stopbits
        self.native = native
        self.cycle = cycle
    }

    /// Whether anything besides the device selection is asked for.
    public var changesSomething: Bool {
        bps != nil || parity != nil || stopbits != nil || native != nil || cycle != nil
    }

    package init(_ attributes: [(name: String, value: RequestValue)]) throws(RequestJSONError) {
        for (name, value) in attributes {
            switch name {
            case "path": path = try value.string()
            case "bps": bps = try value.int()
            case "parity": parity = try value.string()
            case "stopbits": stopbits = try value.int()
            case "native": native = try value.int()
            case "cycle": cycle = try value.double()
            default: continue
            }
        }
    }
}

/// One request a client can make.
package enum GPSDRequest: Equatable {
    case version
    case devices
    /// `?WATCH;` reports the policy; `?WATCH={...}` changes it first.
    case watch([(name: String, value: RequestValue)]?)
    case poll
    /// `?DEVICE;` reports the device; `?DEVICE={...}` selects and possibly changes one first.
    case device(DeviceChange?)

    package static func == (lhs: GPSDRequest, rhs: GPSDRequest) -> Bool {
        switch (lhs, rhs) {
        case (.version, .version), (.devices, .devices), (.poll, .poll): true
        case (.device(let a), .device(let b)): a == b
        case (.watch(let a), .watch(let b)):
            a?.map(\.name) == b?.map(\.name) && a?.map(\.value) == b?.map(\.value)
        default: false
        }
    }
}

/// Why a request cannot be answered; `message` is the ERROR object's text.
package enum RequestError: Error, Equatable {
    case unrecognized(String)
    case invalidWatch(RequestJSONError)
    case invalidDevice(RequestJSONError)
    case tooLong

    package var message: String {
        switch self {
        case .unrecognized(let text): "Unrecognized request '\(text)'"
        case .invalidWatch(let error): "Invalid WATCH: \(error)"
        case .invalidDevice(let error): "Invalid DEVICE: \(error)"
        case .tooLong: "Request too long: more than \(maxRequestLength) characters"
        }
    }
}

extension GPSDRequest {
    /// Reads one request's text (from `?`, without its terminator). Command names are upper case,
    /// as gpsd matches them.
    package static func parse(_ text: ArraySlice<UInt8>) -> Result<GPSDRequest, RequestError> {
        // The request's text only for the reply to one not recognised, not for every request.
        var unrecognized: Result<GPSDRequest, RequestError> {
            .failure(.unrecognized(String(decoding: text, as: UTF8.self)))
        }
        var nameEnd = text.startIndex + 1
        while nameEnd < text.endIndex, (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(text[nameEnd]) {
            nameEnd += 1
        }
        let name = String(decoding: text[(text.startIndex + 1)..<nameEnd], as: UTF8.self)
        var rest = text[nameEnd...]
        while let last = rest.last, RequestObjectReader.isSpace(last) { rest = rest.dropLast() }
        let argument: ArraySlice<UInt8>?
        if rest.isEmpty {
            argument = nil
        } else if rest.first == UInt8(ascii: "=") {
            argument = rest.dropFirst()
        } else {
            return unrecognized
        }
        switch (name, argument) {
        case ("VERSION", nil): return .success(.version)
        case ("DEVICES", nil): return .success(.devices)
        case ("POLL", nil): return .success(.poll)
        case ("WATCH", nil): return .success(.watch(nil))
        case ("DEVICE", nil): return .success(.device(nil))
        case ("WATCH", let json?):
            do {
                let object = try RequestObjectReader.read(json)
                guard object.end == json.endIndex else { return .failure(.invalidWatch(.badTrail)) }
                return .success(.watch(object.attributes))
            } catch {
                return .failure(.invalidWatch(error))
            }
        case ("DEVICE", let json?):
            do {
                let object = try RequestObjectReader.read(json)
                guard object.end == json.endIndex else { return .failure(.invalidDevice(.badTrail)) }
                return .success(.device(try DeviceChange(object.attributes)))
            } catch {
                return .failure(.invalidDevice(error))
            }
        default:
            return unrecognized
        }
    }
}
