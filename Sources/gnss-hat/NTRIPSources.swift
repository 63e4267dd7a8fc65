// `gnss-hat ntrip sources URL`: a caster's sourcetable, nearest first when a position is given.
import GNSSHat
import LinuxSystem
import NTRIP

enum NTRIPCommand: Subcommand {
    static let spec = CommandSpec(
        name: "ntrip",
        summary: "NTRIP casters: 'ntrip sources URL' prints a caster's sourcetable",
        arguments: "sources URL",
        argumentCount: 2...2,
        options: [
            .value("near", "LAT,LON", "sort the streams by distance from this position (degrees) and show it"),
            .value("ntrip-password-file", "FILE", "the caster password (its first line) for USER@ in the URL"),
        ],
        details: """
            One line per stream: mountpoint, identifier, format, systems, country, position; with --near the
            nearest RTCM 3 streams first, each with its distance.
            example: gnss-hat ntrip sources ntrip://rtk2go.com:2101 --near 52.52,13.40
            """
    )

    static func run(_ arguments: ParsedArguments) async throws {
        guard arguments.arguments[0] == "sources" else {
            throw UsageError("expected 'sources URL', not '\(arguments.arguments[0])'")
        }
        let near = try position(arguments.value("near"))
        let configuration: NTRIPConfiguration
        do {
            configuration = try NTRIPConfiguration(
                url: arguments.arguments[1], passwordFile: arguments.value("ntrip-password-file"),
                softwareVersion: GNSSHatVersion.current)
        } catch {
            throw UsageError("\(error)")
        }
        let client = NTRIPClient(configuration: configuration)
        let table: Sourcetable
        do {
            table = try await client.sourcetable()
        } catch {
            await client.shutdown()
            throw CommandFailure(.failure, "\(configuration.caster): \(error)")
        }
        await client.shutdown()
        StandardStream.output.write(lines(table, near: near).joined())
    }

    /// `--near LAT,LON`.
    static func position(_ text: String?) throws -> (latitude: Double, longitude: Double)? {
        guard let text else { return nil }
        let parts = text.split(separator: ",").map { Double(String($0.filter { $0 != " " })) }
        guard parts.count == 2, let latitude = parts[0], let longitude = parts[1], abs(latitude) <= 90,
            abs(longitude) <= 180
        else { throw UsageError("--near needs LAT,LON in degrees, not '\(text)'") }
        return (latitude, longitude)
    }

    /// The table's streams, one line each: nearest first with their distance when `near` is given.
    static func lines(_ table: Sourcetable, near: (latitude: Double, longitude: Double)?) -> [String] {
        func describe(_ stream: SourcetableStream) -> String {
            var text = "\(stream.mountpoint)  \(stream.identifier)  \(stream.format)  \(stream.navigationSystem)"
            if !stream.country.isEmpty { text += "  \(stream.country)" }
            if let latitude = stream.latitude, let longitude = stream.longitude {
                text += "  \(Self.degrees(latitude)),\(Self.degrees(longitude))"
            }
            return text
        }
        guard let near else { return table.streams.map { describe($0) + "\n" } }
        let sorted = table.streams(nearestTo: near.latitude, near.longitude, rtcm3Only: true)
        let listed = Set(sorted.map(\.stream.mountpoint))
        return sorted.map { describe($0.stream) + "  \(Self.kilometres($0.distance)) km\n" }
            + table.streams.filter { !listed.contains($0.mountpoint) }.map { describe($0) + "  (no distance)\n" }
    }

    static func degrees(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        let sign = hundredths < 0 ? "-" : ""
        return "\(sign)\(abs(hundredths) / 100).\(String(abs(hundredths) % 100).leftPadded(2))"
    }

    static func kilometres(_ metres: Double) -> String {
        let tenths = Int((metres / 100).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
