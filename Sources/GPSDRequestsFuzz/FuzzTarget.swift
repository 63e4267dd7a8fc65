// libFuzzer entry point over a gpsd client's bytes: GPSDProtocol's RequestScanner, GPSDRequest and
// WatchPolicy, driven through GPSD's ClientSession as the server drives it (no sockets). Built only by
// scripts/fuzz.sh (GNSSHAT_FUZZ=1); see Package.swift.
//
// Properties checked, beyond "no crash, no sanitizer report":
// - every request the scanner finds (or an over-long one) gets a reply: a line, or (an allowed ?DEVICE=
//   change) an effect for the server; every line is one JSON object of a class, ending in CR LF;
// - the watch policy after the input is what a model says: only a ?WATCH= that parses and applies
//   changes it; garbage, errors, over-long requests and every other command leave it as it was;
// - a WATCH that applied, written back as gpsd's WATCH object and read as `?WATCH=` + that object,
//   gives the same policy;
// - the bytes fed in two parts (the split point taken from the input), and for one input in sixteen one
//   byte at a time, give the same lines, effects and policy as fed whole.

import GPSD
import GPSDProtocol

private let device = GPSDDevice(path: "/dev/ttyACM0", driver: "u-blox", bps: 9600, cycle: 1)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    // The view's flags come from the input's length, so a saved input replays with the same view.
    let view = ServiceView(
        device: device, activated: size & 2 == 0 ? 1_700_000_000_000_000_000 : nil, sawData: size & 4 == 0,
        latestTPV: Array("{\"class\":\"TPV\",\"mode\":1}\r\n".utf8), latestSKY: nil, now: 1_700_000_001_000_000_000,
        release: "3.22", revision: "fuzz", allowsDeviceChanges: size & 1 == 0)
    let model = expectations(input)
    var session = ClientSession()
    let whole = session.receive(input, view: view)
    guard session.policy == model.policy else { fatalError("the watch policy changed other than by a valid ?WATCH=") }
    guard whole.lines.count + whole.effects.count >= model.requests else { fatalError("a request got no reply") }
    for line in whole.lines { checkLine(line) }

    let split = size == 0 ? 0 : Int(input[0]) % (size + 1)
    var parts = ClientSession()
    var inParts = parts.receive(input[..<split], view: view)
    let rest = parts.receive(input[split...], view: view)
    inParts.lines += rest.lines
    inParts.effects += rest.effects
    guard inParts.lines == whole.lines, inParts.effects == whole.effects, parts.policy == session.policy else {
        fatalError("a request split across two reads was answered differently")
    }
    if sampled(input) {
        var bytewise = ClientSession()
        var lines: [[UInt8]] = []
        var effects: [SessionEffect] = []
        for index in input.indices {
            let reply = bytewise.receive(input[index..<(index + 1)], view: view)
            lines += reply.lines
            effects += reply.effects
        }
        guard lines == whole.lines, effects == whole.effects, bytewise.policy == session.policy else {
            fatalError("the requests fed one byte at a time were answered differently")
        }
    }
    return 0
}

/// What the session must do with `input`: the number of requests (each owed a reply) and the policy
/// that only valid, applicable `?WATCH=` requests change.
private func expectations(_ input: UnsafeBufferPointer<UInt8>) -> (requests: Int, policy: WatchPolicy) {
    var scanner = RequestScanner()
    scanner.append(input)
    var requests = 0
    var policy = WatchPolicy()
    while let item = scanner.next() {
        requests += 1
        guard case .request(let text) = item, case .success(.watch(let attributes?)) = GPSDRequest.parse(text),
            let updated = try? policy.applying(attributes), updated.device == nil || updated.device == device.path
        else { continue }
        checkWatchRoundTrip(updated)
        policy = updated
    }
    return (requests, policy)
}

/// gpsd's WATCH object of `policy`, read back as a `?WATCH=` argument, sets the same policy.
private func checkWatchRoundTrip(_ policy: WatchPolicy) {
    let object = GPSDResponse.watch(policy).dropLast(2)
    let request = Array("?WATCH=".utf8) + object
    guard case .success(.watch(let attributes?)) = GPSDRequest.parse(request[...]) else {
        fatalError("the WATCH object written for a policy does not parse as ?WATCH=")
    }
    guard let again = try? WatchPolicy().applying(attributes), again == policy else {
        fatalError("the WATCH object written for a policy sets another policy")
    }
}

/// One JSON object naming its class, ending in CR LF, with no other line end in it.
private func checkLine(_ line: [UInt8]) {
    let prefix = Array("{\"class\":\"".utf8)
    guard line.count > prefix.count + 3, line.starts(with: prefix), line.suffix(3) == [0x7D, 0x0D, 0x0A] else {
        fatalError("a reply line is not a JSON object of a class ending in CR LF")
    }
    guard !line.dropLast(2).contains(0x0A), !line.dropLast(2).contains(0x0D) else {
        fatalError("a reply line has a line end inside it")
    }
}

/// One input in sixteen, by an FNV-1a hash of its bytes (a saved crash replays the same way).
private func sampled(_ input: UnsafeBufferPointer<UInt8>) -> Bool {
    var hash: UInt32 = 2_166_136_261
    for byte in input.prefix(64) { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
    hash = (hash ^ UInt32(truncatingIfNeeded: input.count)) &* 16_777_619
    return hash & 15 == 0
}
