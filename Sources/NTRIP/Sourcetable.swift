// A caster's sourcetable: its STR (stream), CAS (caster) and NET (network) records, parsed from the
// text between the answer's head and `ENDSOURCETABLE`; junk lines are counted and skipped.
import GNSSProtocol

/// One `STR` record: a mountpoint and what it streams.
///
/// `STR;mountpoint;identifier;format;format-details;carrier;nav-system;network;country;latitude;
/// longitude;nmea;solution;generator;compression;authentication;fee;bitrate;misc`
public struct SourcetableStream: Sendable, Hashable {
    public var mountpoint: String
    /// Where the stream comes from, usually a town.
    public var identifier: String
    /// `RTCM 3.2`, `RTCM 3.3`, `CMRx`, `RAW`, ...
    public var format: String
    /// The messages and their rates: `1005(10),1077(1),...`.
    public var formatDetails: String
    /// 0 none, 1 L1, 2 L1 and L2.
    public var carrier: Int?
    /// `GPS+GLO+GAL+BDS`, ...
    public var navigationSystem: String
    public var network: String
    /// ISO 3166 country code.
    public var country: String
    /// The station's (or network's) position, degrees; nil when the field is empty or not a number.
    public var latitude: Double?
    public var longitude: Double?
    /// Whether the caster wants the client's position (GGA) to serve the stream (1: a VRS or
    /// nearest-base mountpoint).
    public var requiresPosition: Bool
    /// 0 single base, 1 network.
    public var solution: Int?
    public var generator: String
    public var compression: String
    /// `N` none, `B` Basic, `D` Digest.
    public var authentication: String
    /// `N` free, `Y` fee.
    public var fee: String
    public var bitrate: Int?
    /// The remaining fields, `;`-joined.
    public var miscellaneous: String

    /// Whether the format is RTCM 3 (`RTCM 3`, `RTCM 3.3`, `RTCM3`, ...), which a rover can use.
    public var isRTCM3: Bool {
        let compact = format.uppercased().filter { $0 != " " }
        return compact.hasPrefix("RTCM3")
    }

    /// Whether the record has a usable position (0/0 stands for "none" in many tables).
    public var hasPosition: Bool {
        guard let latitude, let longitude else { return false }
        return abs(latitude) <= 90 && abs(longitude) <= 360 && !(latitude == 0 && longitude == 0)
    }
}

/// A `CAS` or `NET` record, kept as its fields (callers rarely need more than the name).
public struct SourcetableRecord: Sendable, Hashable {
    /// `CAS` or `NET`.
    public var kind: String
    /// The fields after the kind.
    public var fields: [String]
}

/// A parsed sourcetable.
public struct Sourcetable: Sendable, Hashable {
    public var streams: [SourcetableStream]
    public var casters: [SourcetableRecord]
    public var networks: [SourcetableRecord]
    /// Lines that are no record this parser knows (blank lines and `ENDSOURCETABLE` not counted).
    public var skippedLines: Int
    /// Whether the `ENDSOURCETABLE` line came.
    public var isComplete: Bool

    public init(
        streams: [SourcetableStream] = [], casters: [SourcetableRecord] = [], networks: [SourcetableRecord] = [],
        skippedLines: Int = 0, isComplete: Bool = true
    ) {
        self.streams = streams
        self.casters = casters
        self.networks = networks
        self.skippedLines = skippedLines
        self.isComplete = isComplete
    }

    /// Parses the sourcetable text (the body of the answer). Lines end in CRLF or LF; anything
    /// after `ENDSOURCETABLE` is ignored; lines that are no record (or an `STR` without a
    /// mountpoint) are counted in ``skippedLines``. The keywords (`STR`, `CAS`, `NET`,
    /// `ENDSOURCETABLE`) are matched in any case of their ASCII letters, and fields are split at the
    /// byte `;`.
    public init(parsing body: some Sequence<UInt8>) {
        self.init(isComplete: false)
        // Lines are trimmed and their keywords matched as bytes, and only a record's fields become
        // strings: decoding, trimming and upper-casing every line as a string was most of the time of a
        // table full of junk.
        for rawLine in Array(body).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            let line = Self.trimmed(rawLine)
            if line.isEmpty { continue }
            if Self.matches(line, Self.endKeyword) {
                isComplete = true
                return
            }
            let kind = line.prefix { $0 != UInt8(ascii: ";") }
            if Self.matches(kind, Self.streamKeyword) {
                if let stream = Self.stream(Self.fields(line)) { streams.append(stream) } else { skippedLines += 1 }
            } else if Self.matches(kind, Self.casterKeyword) {
                casters.append(SourcetableRecord(kind: "CAS", fields: Array(Self.fields(line).dropFirst())))
            } else if Self.matches(kind, Self.networkKeyword) {
                networks.append(SourcetableRecord(kind: "NET", fields: Array(Self.fields(line).dropFirst())))
            } else {
                skippedLines += 1
            }
        }
    }

    private static let endKeyword = Array("ENDSOURCETABLE".utf8)
    private static let streamKeyword = Array("STR".utf8)
    private static let casterKeyword = Array("CAS".utf8)
    private static let networkKeyword = Array("NET".utf8)

    /// The line without carriage returns and spaces at either end.
    private static func trimmed(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let kept = { (byte: UInt8) in byte != UInt8(ascii: "\r") && byte != UInt8(ascii: " ") }
        guard let first = line.firstIndex(where: kept), let last = line.lastIndex(where: kept) else { return [] }
        return line[first...last]
    }

    /// Whether `bytes` are `keyword` (upper case) with its letters in either case.
    private static func matches(_ bytes: ArraySlice<UInt8>, _ keyword: [UInt8]) -> Bool {
        bytes.count == keyword.count
            && zip(bytes, keyword).allSatisfy { byte, letter in
                byte == letter || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") && byte - 0x20 == letter)
            }
    }

    /// The line's `;`-separated fields.
    private static func fields(_ line: ArraySlice<UInt8>) -> [String] {
        line.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
    }

    /// The mountpoints, in the caster's order.
    public var mountpoints: [String] { streams.map(\.mountpoint) }

    /// The stream named `mountpoint`, if the table has it.
    public func stream(named mountpoint: String) -> SourcetableStream? {
        streams.first { $0.mountpoint == mountpoint }
    }

    /// The streams with a position, nearest first, each with its great-circle distance in metres
    /// from `latitude`, `longitude` (degrees). With `rtcm3Only`, only RTCM 3 streams (a rover can use
    /// no other format).
    public func streams(
        nearestTo latitude: Double, _ longitude: Double, rtcm3Only: Bool = true
    ) -> [(stream: SourcetableStream, distance: Double)] {
        streams.filter { $0.hasPosition && (!rtcm3Only || $0.isRTCM3) }
            .map { stream in
                (stream, WGS84.sphericalDistance(latitude, longitude, stream.latitude ?? 0, stream.longitude ?? 0))
            }
            .sorted { $0.distance < $1.distance }
    }

    /// The nearest RTCM 3 stream with a position, and its distance in metres.
    public func nearest(to latitude: Double, _ longitude: Double) -> (stream: SourcetableStream, distance: Double)? {
        streams(nearestTo: latitude, longitude).first
    }

    static func stream(_ fields: [String]) -> SourcetableStream? {
        func field(_ index: Int) -> String { index < fields.count ? fields[index].trimmingSpaces : "" }
        let mountpoint = field(1)
        guard !mountpoint.isEmpty else { return nil }
        return SourcetableStream(
            mountpoint: mountpoint, identifier: field(2), format: field(3), formatDetails: field(4),
            carrier: Int(field(5)), navigationSystem: field(6), network: field(7), country: field(8),
            latitude: Double(field(9)), longitude: Double(field(10)), requiresPosition: field(11) == "1",
            solution: Int(field(12)), generator: field(13), compression: field(14), authentication: field(15),
            fee: field(16), bitrate: Int(field(17)),
            miscellaneous: fields.count > 18 ? fields[18...].joined(separator: ";") : "")
    }
}

extension String {
    /// Without the given characters at either end.
    func trimmingCharacters(in set: String) -> String {
        let unwanted = Set(set.unicodeScalars)
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !unwanted.contains($0) }),
            let last = scalars.lastIndex(where: { !unwanted.contains($0) })
        else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}
