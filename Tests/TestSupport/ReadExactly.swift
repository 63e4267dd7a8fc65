// Reading a byte stream in a test: the links and sockets return what has arrived, in chunks, so a
// test that expects a number of bytes reads until it has them. Shared by the test targets of the
// sockets (LinuxSystemTests) and of the serial ports (PiHardwareTests).

/// Reads with `read` (given a time-out of a second) until `count` bytes came or a read returns
/// nothing within a second (which only happens when the test is about to fail anyway).
public func readExactly(_ count: Int, from read: (Duration) throws -> [UInt8]) throws -> [UInt8] {
    var bytes: [UInt8] = []
    while bytes.count < count {
        let chunk = try read(.seconds(1))
        if chunk.isEmpty { break }
        bytes += chunk
    }
    return bytes
}
