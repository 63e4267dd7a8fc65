// libFuzzer entry point over a gpsd client's bytes: GPSDProtocol's RequestScanner, GPSDRequest and
// WatchPolicy, driven through ClientSession as GPSD's server drives it (no sockets). Built only by
// scripts/fuzz.sh (GNSSHAT_FUZZ=1); see Package.swift.
//
// Properties checked, beyond "no crash, no sanitizer report":
// - every request the scanner finds (or an over-long one) gets a reply: a line, or (an allowed ?DEVICE=
//   change) an effect for the server; every line is one JSON object of a class, ending in CR LF, with
//   no control character inside;
// - the watch policy after the input is what a model says: only a ?WATCH= that parses and applies
//   changes it; garbage, errors, over-long requests and every other command leave it as it was;
// - a WATCH that applied, written back as gpsd's WATCH object and read as `?WATCH=` + that object,
//   gives the same policy;
// - one input in four: fed in two parts (the split point taken from the input), the same lines, effects
//   and policy as fed whole; one input in 64 the same, fed one byte at a time.
// The samples are chosen by a hash of the whole input, so a saved crash replays its checks. They are for
// throughput (see docs/benchmarks.md, "fuzz"): each feed is another session answering every request again.

import GPSDProtocol

private let device = GPSDDevice(path: "/dev/ttyACM0", driver: "u-blox", bps: 9600, cycle: 1)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    // The view's flags come from the input's length, so a saved input replays with the same view.
    let view = ServiceView(
        device: device, activated: size & 2 == 0 ? 1_700_000_000_000_000_000 : nil, sawData: size & 4 == 0,
        latestTPV: latestTPV, latestSKY: nil, now: 1_700_000_001_000_000_000,
        release: "3.22", revision: "fuzz", allowsDeviceChanges: size & 1 == 0)
    let model = expectations(input)
    var session = ClientSession()
    let whole = session.receive(input, view: view)
    guard session.policy == model.policy else { fatalError("the watch policy changed other than by a valid ?WATCH=") }
    guard whole.lines.count + whole.effects.count >= model.requests else { fatalError("a request got no reply") }
    for line in whole.lines { checkLine(line) }

    let sample = sampleHash(input)
    if sample & 3 == 0 {
        let split = size == 0 ? 0 : Int(input[0]) % (size + 1)
        let parts = feed([input[..<split], input[split...]], view: view)
        guard parts.lines == whole.lines, parts.effects == whole.effects, parts.policy == session.policy else {
            fatalError("a request split across two reads was answered differently")
        }
    }
    if sample & 63 == 0 {
        let bytes = feed(input.indices.lazy.map { input[$0..<($0 + 1)] }, view: view)
        guard bytes.lines == whole.lines, bytes.effects == whole.effects, bytes.policy == session.policy else {
            fatalError("the requests fed one byte at a time were answered differently")
        }
    }
    return 0
}

private let latestTPV = Array("{\"class\":\"TPV\",\"mode\":1}\r\n".utf8)

/// A new session's replies and policy after the input fed in `pieces`, one read each.
private func feed(
    _ pieces: some Sequence<Slice<UnsafeBufferPointer<UInt8>>>, view: ServiceView
) -> (lines: [[UInt8]], effects: [SessionEffect], policy: WatchPolicy) {
    var session = ClientSession()
    var lines: [[UInt8]] = []
    var effects: [SessionEffect] = []
    for piece in pieces {
        let reply = session.receive(piece, view: view)
        lines += reply.lines
        effects += reply.effects
    }
    return (lines, effects, session.policy)
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

/// One JSON object naming its class, ending in CR LF, with no control character before that (JSON escapes
/// them in strings, and gpsd's objects have no whitespace).
private func checkLine(_ line: [UInt8]) {
    // The line's own slices: `line.suffix(3) == [...]` took Sequence's suffix, which copies the line into an
    // array; and one pass for every control character, not one for CR and another for LF.
    guard line.count > classPrefix.count + 3, line.starts(with: classPrefix),
        line[(line.count - 3)...].elementsEqual(objectEnd)
    else {
        fatalError("a reply line is not a JSON object of a class ending in CR LF")
    }
    guard line.dropLast(2).allSatisfy({ $0 >= 0x20 }) else {
        fatalError("a reply line has a line end or another control character inside it")
    }
}

private let classPrefix = Array("{\"class\":\"".utf8)
private let objectEnd: [UInt8] = [0x7D, 0x0D, 0x0A]

/// A hash of the whole input (FNV-1a, then murmur3's finaliser, so that every bit of every byte moves its
/// low bits), whose low bits pick the samples: a saved crash replays its checks, and a mutant that changed
/// any byte is drawn afresh.
private func sampleHash(_ input: UnsafeBufferPointer<UInt8>) -> UInt32 {
    var hash: UInt32 = 2_166_136_261
    for byte in input { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
    hash = (hash ^ (hash >> 16)) &* 0x85EB_CA6B
    hash = (hash ^ (hash >> 13)) &* 0xC2B2_AE35
    return hash ^ (hash >> 16)
}
