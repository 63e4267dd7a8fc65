internal import CI2C
import GNSSHatTesting
import Glibc
import LinuxSystem
@testable import PiHardware
import Testing

/// A seam mock that makes `/dev/i2c-7` a u-blox on a fake bus: `open` hands out a descriptor of
/// /dev/null and `ioctl(I2C_RDWR)` decodes the kernel structs and forwards them to `device`, so
/// the real marshalling in `I2CAdapter` runs.
func ubloxOnBus7(_ device: FakeUBloxI2C) -> SeamMock {
    SeamMock(
        open: { path, _ in path == "/dev/i2c-7" ? Glibc.open("/dev/null", O_RDWR | O_CLOEXEC) : nil },
        ioctl: { _, request, arg in
            guard request == UInt(I2C_RDWR), let arg else { return nil }
            let data = arg.assumingMemoryBound(to: i2c_rdwr_ioctl_data.self).pointee
            let messages = UnsafeMutableBufferPointer(start: data.msgs, count: Int(data.nmsgs))
            let segments = messages.map { message -> I2CSegment in
                message.flags & UInt16(I2C_M_RD) != 0
                    ? .read(Int(message.len))
                    : .write(Array(UnsafeBufferPointer(start: message.buf, count: Int(message.len))))
            }
            do throws(I2CError) {
                var reads = try device.transfer(address: messages[0].addr, segments)[...]
                for message in messages where message.flags & UInt16(I2C_M_RD) != 0 {
                    let bytes = reads.removeFirst()
                    let buffer = UnsafeMutableBufferPointer(start: message.buf, count: Int(message.len))
                    _ = buffer.update(fromContentsOf: bytes)
                }
                return CInt(messages.count)
            } catch {
                Glibc.errno = error.failedCall?.errno?.rawValue ?? EIO
                return -1
            }
        })
}

/// A short name per error case, so tables can say which case they expect.
func kind(_ error: I2CError) -> String {
    switch error {
    case .noBus: "noBus"
    case .permissionDenied: "permissionDenied"
    case .noDevice: "noDevice"
    case .nak: "nak"
    case .timeout: "timeout"
    case .busError: "busError"
    case .arbitrationLost: "arbitrationLost"
    case .unsupported: "unsupported"
    case .vanished: "vanished"
    case .invalidTransfer: "invalidTransfer"
    case .closed: "closed"
    case .failed: "failed"
    }
}

@Suite("I2C adapter through the seam (I2C_RDWR)")
struct I2CAdapterTests {
    @Test("a register read and a chunk read go through I2C_RDWR as combined transfers")
    func combinedTransfers() throws {
        let device = FakeUBloxI2C()
        device.enqueue(Array("$GNGGA,1*00\r\n".utf8))
        let mock = ubloxOnBus7(device)
        let bytes = try SeamMock.$current.withValue(mock) {
            let bus = try I2CAdapter(bus: 7)
            // The u-blox byte count (registers 0xFD, 0xFE), then the stream register 0xFF.
            #expect(try bus.writeRead(address: 0x42, [0xFD], readCount: 2) == [0, 13])
            return try bus.writeRead(address: 0x42, [0xFF], readCount: 13)
        }
        #expect(String(decoding: bytes, as: UTF8.self) == "$GNGGA,1*00\r\n")
        #expect(device.transfers == [[.write([0xFD]), .read(2)], [.write([0xFF]), .read(13)]])
        #expect(mock.calls == ["open", .ioctl("I2C_RDWR"), .ioctl("I2C_RDWR"), "close"])
        #expect(mock.records.allSatisfy { $0.device == "/dev/i2c-7" })
    }

    @Test("a write reaches the device unchanged")
    func write() throws {
        let device = FakeUBloxI2C()
        let poll: [UInt8] = [0xB5, 0x62, 0x0A, 0x04, 0x00, 0x00, 0x0E, 0x34]
        try SeamMock.$current.withValue(ubloxOnBus7(device)) {
            try I2CAdapter(path: "/dev/i2c-7").write(address: 0x42, poll)
        }
        #expect(device.received == [poll])
    }

    static let mappings: [(Errno, String)] = [
        (.remoteIO, "nak"), (.noSuchDeviceOrAddress, "noDevice"), (.timedOut, "timeout"), (.ioError, "busError"),
        (.protocolError, "busError"), (.wouldBlock, "arbitrationLost"), (.notSupported, "unsupported"),
        (.noSuchDevice, "vanished"), (.shutDown, "vanished"), (.invalidArgument, "failed"),
    ]

    @Test("kernel I2C fault codes become typed errors", arguments: mappings)
    func faultCodes(errno: Errno, expected: String) throws {
        let device = FakeUBloxI2C()
        let mock = ubloxOnBus7(device)
        mock.fail(.ioctl("I2C_RDWR"), with: errno)
        do {
            _ = try SeamMock.$current.withValue(mock) {
                try I2CAdapter(bus: 7).writeRead(address: 0x42, [0xFD], readCount: 2)
            }
            Issue.record("\(errno) did not throw")
        } catch {
            let error = try #require(error as? I2CError)
            #expect(kind(error) == expected)
            #expect(error.failedCall == FailedCall(call: "ioctl(I2C_RDWR)", device: "/dev/i2c-7", errno: errno))
        }
        #expect(device.transfers.isEmpty)
    }

    @Test("a NAK from the device itself comes back as .nak too")
    func deviceNak() throws {
        let device = FakeUBloxI2C(address: 0x42)
        #expect {
            try SeamMock.$current.withValue(ubloxOnBus7(device)) {
                try I2CAdapter(bus: 7).read(address: 0x43, count: 2)
            }
        } throws: { error in
            // The description says what a NAK means, beside the call and its errno.
            guard case .nak = error as? I2CError else { return false }
            return "\(error)".contains("NAK") && "\(error)".contains("EREMOTEIO")
        }
    }

    @Test("open failures are typed", arguments: [
        (Errno.noSuchFileOrDirectory, "noBus"), (.permissionDenied, "permissionDenied"),
        (.notPermitted, "permissionDenied"),
    ])
    func openFailures(errno: Errno, expected: String) throws {
        let mock = SeamMock()
        mock.fail("open", with: errno)
        do {
            _ = try SeamMock.$current.withValue(mock) { try I2CAdapter(bus: 1) }
            Issue.record("open did not fail")
        } catch {
            let error = try #require(error as? I2CError)
            #expect(kind(error) == expected)
            #expect(error.failedCall?.device == "/dev/i2c-1")
        }
    }

    @Test("a real missing bus is .noBus")
    func missingBus() {
        let failure = FailedCall(call: "open", device: "/dev/i2c-999", errno: .noSuchFileOrDirectory)
        #expect(throws: I2CError.noBus(failure)) {
            try I2CAdapter(bus: 999)
        }
    }

    @Test("EINTR is retried on open and on the transfer")
    func interrupted() throws {
        let device = FakeUBloxI2C()
        device.enqueue([1, 2, 3])
        let mock = ubloxOnBus7(device)
        mock.fail("open", with: .interrupted, times: 2)
        mock.fail(.ioctl("I2C_RDWR"), with: .interrupted, times: 3)
        let bytes = try SeamMock.$current.withValue(mock) {
            let bus = try I2CAdapter(bus: 7)
            #expect(try bus.writeRead(address: 0x42, [0xFD], readCount: 2) == [0, 3])
            return try bus.writeRead(address: 0x42, [0xFF], readCount: 3)
        }
        #expect(bytes == [1, 2, 3])
        #expect(mock.count("open") == 3)
        #expect(mock.count(.ioctl("I2C_RDWR")) == 2 + 3)
    }

    @Test("transfers the kernel would refuse are refused first", arguments: [
        [I2CSegment](), [.read(0)], [.write([])], [.read(8193)],
        Array(repeating: I2CSegment.read(1), count: 43),
    ])
    func invalid(segments: [I2CSegment]) throws {
        let mock = ubloxOnBus7(FakeUBloxI2C())
        try SeamMock.$current.withValue(mock) {
            let bus = try I2CAdapter(bus: 7)
            #expect {
                try bus.transfer(address: 0x42, segments)
            } throws: { error in
                if case .invalidTransfer = error as? I2CError { true } else { false }
            }
            #expect(throws: I2CError.self) { try bus.transfer(address: 0x80, [.read(1)]) }
        }
        #expect(mock.count(.ioctl("I2C_RDWR")) == 0)
    }

    @Test("a closed bus says so")
    func closed() throws {
        try SeamMock.$current.withValue(ubloxOnBus7(FakeUBloxI2C())) {
            let bus = try I2CAdapter(bus: 7)
            bus.close()
            bus.close()
            #expect(throws: I2CError.closed(device: "/dev/i2c-7")) { try bus.read(address: 0x42, count: 1) }
        }
    }
}
