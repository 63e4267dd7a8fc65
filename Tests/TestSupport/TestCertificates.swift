// Certificates for TLS tests (the MQTT broker's, the NTRIP caster's TLS front), made with Debian's openssl.
public import Foundation

/// Runs a tool to its end and fails with its output when it fails.
@discardableResult
public func runTool(
    _ path: String, package: String, _ arguments: [String], directory: URL? = nil
) throws -> CommandRun {
    let run = try CommandRun.run(executable: TestPaths.tool(path, package: package), arguments, directory: directory)
    guard run.status == 0 else { throw TestSetupError("\(path) \(arguments) failed (\(run.status)): \(run.err)") }
    return run
}

/// A test CA, a server certificate for `localhost` / 127.0.0.1 signed by it, and a second CA that
/// signed nothing (the wrong CA), made with openssl in `directory`.
public struct TestCertificates {
    public let ca: String
    public let wrongCA: String
    public let serverCertificate: String
    public let serverKey: String

    public init(directory: URL) throws {
        let d = directory.path
        func openssl(_ arguments: [String]) throws {
            try runTool("/usr/bin/openssl", package: "openssl", arguments, directory: directory)
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for name in ["ca", "wrong-ca"] {
            try openssl(["req", "-x509"] + ec + ["-keyout", "\(d)/\(name).key", "-out", "\(d)/\(name).crt",
                                                  "-days", "2", "-subj", "/CN=GNSSHat test \(name)"])
        }
        try openssl(["req"] + ec + ["-keyout", "\(d)/server.key", "-out", "\(d)/server.csr", "-subj", "/CN=localhost"])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
            .write(toFile: "\(d)/san.ext", atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", "\(d)/server.csr", "-CA", "\(d)/ca.crt", "-CAkey", "\(d)/ca.key",
                     "-CAcreateserial", "-out", "\(d)/server.crt", "-days", "2", "-extfile", "\(d)/san.ext"])
        ca = "\(d)/ca.crt"
        wrongCA = "\(d)/wrong-ca.crt"
        serverCertificate = "\(d)/server.crt"
        serverKey = "\(d)/server.key"
    }
}
