import GNSSProtocol
import Testing

@testable import MQTT

/// The bridge's backlog while its handler is slow: every fix waits, but one sky view at most (the soak's
/// memory grew by the sky views of a few seconds' backlog at `--speed 200`, never given back).
@Suite struct BridgeBacklogTests {
    func fix(_ index: Int) -> Fix {
        var fix = Fix()
        fix.latitude = Double(index)
        return fix
    }

    func sky(_ index: Int) -> SkyView {
        SkyView(satellites: [SatelliteInView(system: .gps, svid: index, prn: index, used: true)])
    }

    /// What the events are, in the order taken: `fix N`, `sky N`, or `other`.
    func drain(_ backlog: inout BridgeBacklog) -> [String] {
        var taken: [String] = []
        while let event = backlog.removeFirst() {
            switch event {
            case let .fix(fix, _): taken.append("fix \(Int(fix.latitude ?? -1))")
            case let .sky(sky): taken.append("sky \(sky.satellites.first?.svid ?? -1)")
            default: taken.append("other")
            }
        }
        return taken
    }

    @Test func aBacklogOfEpochsHoldsEveryFixAndTheNewestSkyView() {
        var backlog = BridgeBacklog()
        for epoch in 0..<1000 {
            backlog.append(.fix(fix(epoch), now: .seconds(epoch)))
            backlog.append(.sky(sky(epoch)))
        }
        #expect(backlog.count == 1001)
        let taken = drain(&backlog)
        // The sky view waits where the first one was queued, and it is the newest.
        #expect(taken == ["fix 0", "sky 999"] + (1..<1000).map { "fix \($0)" })
        #expect(backlog.isEmpty)
        #expect(backlog.removeFirst() == nil)
    }

    @Test func aSkyViewAfterTheWaitingOneWasTakenQueuesAgain() {
        var backlog = BridgeBacklog()
        backlog.append(.sky(sky(1)))
        backlog.append(.started(now: .zero))
        #expect(drain(&backlog) == ["sky 1", "other"])
        backlog.append(.sky(sky(2)))
        backlog.append(.fix(fix(3), now: .zero))
        let first = backlog.removeFirst()
        if case let .sky(view) = first { #expect(view.satellites.first?.svid == 2) } else {
            Issue.record("expected the sky view, got \(String(describing: first))")
        }
        backlog.append(.sky(sky(4)))
        backlog.append(.sky(sky(5)))
        #expect(drain(&backlog) == ["fix 3", "sky 5"])
    }

    @Test func removeAllDropsTheWaitingSkyView() {
        var backlog = BridgeBacklog()
        backlog.append(.sky(sky(1)))
        backlog.append(.fix(fix(2), now: .zero))
        backlog.removeAll()
        #expect(backlog.isEmpty)
        backlog.append(.fix(fix(3), now: .zero))
        #expect(drain(&backlog) == ["fix 3"])
    }
}
