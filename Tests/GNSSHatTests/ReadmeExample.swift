import Foundation
import GNSSHat
import GNSSHatSimulator
import GNSSProtocol
import Signals
import TestSupport
import Testing

// The README's library examples, verbatim between the `README:` and `:README` marks: if this stops compiling or
// working, the README is wrong. `ReadmeVerbatimTests` checks that the README still shows each marked block.

// README:
/// Powers the hat on, waits for a position, and lets it power off again.
func firstPosition(board name: String = "simulator", clock: some Clock<Duration> = ContinuousClock())
    async throws -> Fix?
{
    let receiver = try Receiver(board: BoardCatalog.load(name), hardware: .systemOrSimulated, clock: clock)
    let states = Task {  // off, powering on, on, lingering, powering off, off (or failed)
        for await state in receiver.powerStates() { print("power:", state) }
    }
    defer { states.cancel() }
    var position: Fix?
    for try await fix in receiver.fixes where fix.hasPosition {  // the first subscriber powers it on
        position = fix
        break  // the last one leaves: off after the board's linger
    }
    print("time to first fix:", receiver.statistics.lastTimeToFirstFix ?? .zero)
    await receiver.shutdown()  // off at once, GPIO lines released
    return position
}
// :README

// The demand-shaped power and decoding examples are compiled, not run: the first runs for ever, the second prints.

private func readmeDemandShapedPower(report: (Fix) -> Void) async throws {
    // README:
    let receiver = try Receiver(board: BoardCatalog.load("simulator-cut-supply"),
                                options: ReceiverOptions(stateDirectory: "/var/lib/gnss-hat"),
                                hardware: .systemOrSimulated)
    for try await fix in receiver.fixes(every: .seconds(600), accuracy: 10) {
        report(fix)      // one fix per 10 minutes, ≤ 10 m (gpsd's eph); the receiver is off in between
    }
    print(receiver.powerPlan)  // "duty cycle, next fix in 7:12 (a fix every 600 s, 10 m: duty cycle ...)"
    // :README
}

private func readmeDecoding(bytesFromTheReceiver: [UInt8]) {
    // README:
    var decoder = GNSSDecoder()                            // framer, decoders and epoch assembly in one
    decoder.append(contentsOf: bytesFromTheReceiver)       // any chunking
    while let output = decoder.next() {                    // nil: needs more bytes
        switch output {
        case .message(.ubx(.navPVT(let pvt))): print(pvt.latitude, pvt.altitudeMSL)
        case .epoch(let epoch):                            // a fix (gpsd TPV) and a sky view (SKY)
            if let fix = epoch.fix { print(fix.time?.iso8601 ?? "-", fix.mode, fix.latitude ?? .nan) }
        case .undecodable(_, let error): print(error)      // typed DecodeError; the stream goes on
        default: break                                     // other messages, epoch starts, provisional fixes
        }
    }
    decoder.finish()                                       // at the end: next() then gives the epoch in progress
    print(decoder.statistics)  // frames per protocol, bytes discarded, checksum failures, messages, epochs, ...

    // Encoders, for configuring a receiver (or simulating one):
    let enablePVT = UBXCfgValSet(items: [UBXConfigItem(key: UBXConfigItem.msgoutNavPVTI2C, value: 1)]).frame
    let standby = PMTK.standby                                             // $PMTK161,0*28
    let gga = NMEAGGA(time: TimeOfDay(hour: 12, minute: 0, second: 0), latitude: 44.07, longitude: -121.31,
                      quality: 1, satellitesUsed: 9, hdop: 0.9, altitudeMSL: 1140, geoidSeparation: -21.4).sentence()
    // :README
    _ = (enablePVT, standby, gga)
}

@Suite("README")
struct ReadmeExampleTests {
    @Test("the library example finds a position on the simulator (in fast motion)")
    func example() async throws {
        let fix = try await firstPosition(clock: AcceleratedClock(rate: 10))
        #expect(fix?.hasPosition == true)
    }

    @Test("the decoding example's comment says what PMTK.standby is")
    func standbySentence() {
        #expect(String(decoding: PMTK.standby, as: UTF8.self) == "$PMTK161,0*28\r\n")
    }
}

/// Every block marked in the files that compile the README's examples appears in the README as it is there.
@Suite("README verbatim")
struct ReadmeVerbatimTests {
    static let sources = ["Tests/GNSSHatTests/ReadmeExample.swift", "Tests/SignalsTests/ReadmeDemandExampleTests.swift"]

    @Test("each marked example is in the README, line for line", arguments: sources)
    func examplesAreInTheReadme(source: String) throws {
        let readme = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let text = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent(source), encoding: .utf8)
        let blocks = Self.markedBlocks(text)
        #expect(!blocks.isEmpty, "\(source) marks no example")
        for block in blocks {
            let shown = readme.contains(block)
            #expect(shown, "the README does not show this example of \(source):\n\(block)")
        }
    }

    /// The lines between each `// README:` and `// :README`, their common indentation removed.
    static func markedBlocks(_ text: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let mark = line.trimmingCharacters(in: .whitespaces)
            if mark == "// README:" {
                current = []
            } else if mark == "// :README", let lines = current {
                let indent = lines.filter { !$0.allSatisfy(\.isWhitespace) }
                    .map { $0.prefix(while: { $0 == " " }).count }.min() ?? 0
                blocks.append(lines.map { String($0.dropFirst(min(indent, $0.count))) }.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }
}
