// One client's side of the protocol, without sockets: requests in, reply lines and a subscription
// decision out; events in, the lines this client's policy asks for out. The server owns the socket
// and the subscription and does what this says (GPSD's ServerLoop). Here, with the protocol and no
// I/O, and package-visible, so that the gpsd fuzz target (GPSDRequestsFuzz) drives it as the server
// does without linking the service.

/// What the server knows that a reply needs.
package struct ServiceView {
    package var device: GPSDDevice
    /// When the device became active (ns since the epoch), or `nil` while it is off.
    package var activated: Int64?
    /// Whether reports arrived since the device became active (DEVICE `flags`).
    package var sawData: Bool
    /// The latest TPV and SKY lines, for `?POLL`.
    package var latestTPV: [UInt8]?
    package var latestSKY: [UInt8]?
    /// The wall clock now, ns since the epoch.
    package var now: Int64
    package var release: String
    package var revision: String
    package var allowsDeviceChanges: Bool

    package init(
        device: GPSDDevice, activated: Int64?, sawData: Bool, latestTPV: [UInt8]?, latestSKY: [UInt8]?, now: Int64,
        release: String, revision: String, allowsDeviceChanges: Bool
    ) {
        self.device = device
        self.activated = activated
        self.sawData = sawData
        self.latestTPV = latestTPV
        self.latestSKY = latestSKY
        self.now = now
        self.release = release
        self.revision = revision
        self.allowsDeviceChanges = allowsDeviceChanges
    }
}

/// What handling a request asks of the server besides sending `lines`.
package enum SessionEffect: Equatable {
    /// Apply a `?DEVICE=` change; the reply (DEVICE or ERROR) comes when it is done.
    case configure(DeviceChange)
}

package struct ClientSession {
    package private(set) var policy = WatchPolicy()
    private var scanner = RequestScanner()

    /// Whether the client should hold a subscription: it watches (gpsd's `watcher`).
    package var wantsSubscription: Bool { policy.enable }

    package init() {}

    /// Bytes waiting for the rest of a request.
    package var pendingInput: Int { scanner.pendingCount }

    /// Feeds received bytes; returns the reply lines in order, and any effect to carry out.
    package mutating func receive(
        _ bytes: some Sequence<UInt8>, view: ServiceView
    ) -> (lines: [[UInt8]], effects: [SessionEffect]) {
        scanner.append(bytes)
        var lines: [[UInt8]] = []
        var effects: [SessionEffect] = []
        while let item = scanner.next() {
            switch item {
            case .tooLong:
                lines.append(GPSDResponse.error(RequestError.tooLong.message))
            case .request(let text):
                handle(GPSDRequest.parse(text), view: view, lines: &lines, effects: &effects)
            }
        }
        return (lines, effects)
    }

    private mutating func handle(
        _ parsed: Result<GPSDRequest, RequestError>, view: ServiceView, lines: inout [[UInt8]],
        effects: inout [SessionEffect]
    ) {
        let device = view.device
        switch parsed {
        case .failure(let error):
            lines.append(GPSDResponse.error(error.message))
            // gpsd answers a broken ?WATCH with the device list and the (unchanged) policy too.
            if case .invalidWatch = error {
                lines.append(GPSDResponse.devices(device, activated: view.activated, sawData: view.sawData))
                lines.append(GPSDResponse.watch(policy))
            }
        case .success(.version):
            lines.append(GPSDResponse.version(release: view.release, revision: view.revision))
        case .success(.devices):
            lines.append(GPSDResponse.devices(device, activated: view.activated, sawData: view.sawData))
        case .success(.poll):
            let active = policy.enable && view.activated != nil && view.sawData ? 1 : 0
            lines.append(GPSDResponse.poll(
                time: view.now, active: active,
                tpv: active == 1 ? view.latestTPV : nil, sky: active == 1 ? view.latestSKY : nil
            ))
        case .success(.watch(let attributes)):
            if let attributes {
                do {
                    let updated = try policy.applying(attributes)
                    if let path = updated.device, path != device.path {
                        lines.append(GPSDResponse.error("No such device as \(path)"))
                        return
                    }
                    policy = updated
                } catch {
                    lines.append(GPSDResponse.error(RequestError.invalidWatch(error).message))
                }
            }
            lines.append(GPSDResponse.devices(device, activated: view.activated, sawData: view.sawData))
            lines.append(GPSDResponse.watch(policy))
        case .success(.device(nil)):
            lines.append(GPSDResponse.device(device, activated: view.activated, sawData: view.sawData))
        case .success(.device(let change?)):
            if let path = change.path, path != device.path {
                lines.append(GPSDResponse.error("Can't open \(path)."))
                return
            }
            guard change.changesSomething else {
                lines.append(GPSDResponse.device(device, activated: view.activated, sawData: view.sawData))
                return
            }
            guard view.allowsDeviceChanges else {
                lines.append(GPSDResponse.error(
                    "Device configuration is read-only (gnss-hat serve --allow-device-changes allows it)."))
                lines.append(GPSDResponse.device(device, activated: view.activated, sawData: view.sawData))
                return
            }
            effects.append(.configure(change))
        }
    }
}
