// The request a client sends: `GET /MOUNT` in NTRIP 1 or 2 form, with the User-Agent casters want,
// Basic authentication, and for NTRIP 2 the `Ntrip-GGA` header. Pure: bytes out, nothing sent.

/// The bytes of a client's request to a caster.
public enum NTRIPRequest {
    /// `GET /MOUNTPOINT` (or `GET /` for the sourcetable, `mountpoint` nil).
    ///
    /// NTRIP 1: `HTTP/1.0`, as RTKLIB and SNIP expect. NTRIP 2: `HTTP/1.1` with `Host`,
    /// `Ntrip-Version: Ntrip/2.0`, and the position as `Ntrip-GGA` when one is given. Both send
    /// `User-Agent: NTRIP gnss-hat/VERSION` (casters refuse a client without `NTRIP` in it) and
    /// `Connection: close`. Everything goes in one write: some casters read the request with one `recv`.
    public static func bytes(
        caster: CasterURL, mountpoint: String?, version: NTRIPVersion, softwareVersion: String,
        credentials: (user: String, password: String)?, gga: [UInt8]?
    ) -> [UInt8] {
        let path = "/" + (mountpoint.map(percentEncoded) ?? "")
        var lines: [String] = []
        switch version {
        case .v1:
            lines.append("GET \(path) HTTP/1.0")
        case .v2:
            lines.append("GET \(path) HTTP/1.1")
            lines.append("Host: \(caster.authority)")
            lines.append("Ntrip-Version: Ntrip/2.0")
        }
        lines.append("User-Agent: NTRIP gnss-hat/\(softwareVersion)")
        if let credentials {
            let pair = Array("\(credentials.user):\(credentials.password)".utf8)
            lines.append("Authorization: Basic " + Base64.encode(pair))
        }
        if version == .v2, let gga {
            // The sentence without its CRLF: a header value ends at the line's end.
            let sentence = gga.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }
            lines.append("Ntrip-GGA: " + String(decoding: sentence, as: UTF8.self))
        }
        lines.append("Accept: */*")
        lines.append("Connection: close")
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    /// `%XX` for every byte of a mountpoint that may not stand in a path as it is.
    static func percentEncoded(_ mountpoint: String) -> String {
        var text = ""
        for byte in mountpoint.utf8 {
            let scalar = Unicode.Scalar(byte)
            if byte < 0x80, scalar.properties.isAlphabetic || (byte >= 0x30 && byte <= 0x39)
                || "-._~".unicodeScalars.contains(scalar) {
                text.unicodeScalars.append(scalar)
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                text += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return text
    }
}

/// RFC 4648 Base64, for Basic authentication.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            let b0 = UInt32(bytes[index])
            let b1 = count > 1 ? UInt32(bytes[index + 1]) : 0
            let b2 = count > 2 ? UInt32(bytes[index + 2]) : 0
            let group = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(group >> 18 & 63)])
            out.append(alphabet[Int(group >> 12 & 63)])
            out.append(count > 1 ? alphabet[Int(group >> 6 & 63)] : UInt8(ascii: "="))
            out.append(count > 2 ? alphabet[Int(group & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
