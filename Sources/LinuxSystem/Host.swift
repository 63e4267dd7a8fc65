// The machine's own name, for defaults that name the device (the MQTT bridge's topics).
internal import Glibc

/// The machine this process runs on.
public enum Host {
    /// The machine's host name (`gethostname`), as the kernel has it (`uname -n`).
    public static func name() throws(SystemError) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        let result = buffer.withUnsafeMutableBufferPointer { raw -> CInt in
            guard let base = raw.baseAddress else { return failC(.noMemory) }
            // One byte kept back: the name is NUL-terminated even when the kernel's fills the rest.
            return system_gethostname(base, raw.count - 1)
        }
        if result == -1 { throw SystemError(FailedCall(call: "gethostname", device: "host", errno: .current)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
