// Host names to socket addresses (`getaddrinfo`), for clients that connect to a server named by the
// user (an NTRIP caster). A service binds numeric addresses and never resolves (SocketAddress).
internal import CLinuxShims
internal import Glibc

extension SocketAddress {
    /// The TCP addresses of `host` (a name, or a numeric IPv4 or IPv6 address) at `port`, in the order
    /// `getaddrinfo` gives them (`AI_ADDRCONFIG`: only families this machine has an address of).
    /// Blocks while the resolver asks the name servers. Throws ``SocketError/unresolvedName(_:reason:)``
    /// with `gai_strerror`'s text when the name has no address.
    public static func resolve(host: String, port: UInt16) throws(SocketError) -> [SocketAddress] {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard !bare.isEmpty else { throw .unresolvedName(host, reason: "the host name is empty") }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = CInt(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let code = system_getaddrinfo(bare, String(port), &hints, &list)
        guard code == 0 else {
            throw .unresolvedName(host, reason: String(cString: gai_strerror(code)))
        }
        defer { if let list { freeaddrinfo(list) } }
        var addresses: [SocketAddress] = []
        var entry = list
        while let current = entry {
            let length = Int(current.pointee.ai_addrlen)
            if let address = current.pointee.ai_addr, length <= MemoryLayout<sockaddr_storage>.size {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { raw in
                    raw.copyMemory(from: UnsafeRawBufferPointer(start: address, count: length))
                }
                if let parsed = SocketAddress.from(&storage), !addresses.contains(parsed) { addresses.append(parsed) }
            }
            entry = current.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw .unresolvedName(host, reason: "no IPv4 or IPv6 address") }
        return addresses
    }
}

/// `getaddrinfo`: returns 0 or an `EAI_*` code (not an errno); injected failures come back as
/// `EAI_SYSTEM` with the errno set.
func system_getaddrinfo(
    _ host: String, _ service: String, _ hints: UnsafePointer<addrinfo>,
    _ result: UnsafeMutablePointer<UnsafeMutablePointer<addrinfo>?>
) -> CInt {
    if let errno = seamEnter("getaddrinfo", host) {
        Errno.current = errno
        return EAI_SYSTEM
    }
    return Glibc.getaddrinfo(host, service, hints, result)
}
