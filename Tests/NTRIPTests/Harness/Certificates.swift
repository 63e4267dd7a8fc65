// A test CA, a server certificate for localhost and 127.0.0.1 signed by it, and a second CA that
// signed nothing (the wrong CA), made with openssl.
import Foundation
import TestSupport

struct TestCertificates {
    let ca: String
    let wrongCA: String
    let serverCertificate: String
    let serverKey: String

    init(directory: URL) throws {
        let d = directory.path
        func openssl(_ arguments: [String]) throws {
            let run = try CommandRun.run(executable: TestPaths.tool("/usr/bin/openssl", package: "openssl"), arguments,
                                         directory: directory)
            guard run.status == 0 else { throw TestSetupError("openssl \(arguments) failed: \(run.err)") }
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for name in ["ca", "wrong-ca"] {
            try openssl(["req", "-x509"] + ec + ["-keyout", "\(d)/\(name).key", "-out", "\(d)/\(name).crt",
                                                  "-days", "2", "-subj", "/CN=GNSSHat NTRIP test \(name)"])
        }
        try openssl(["req"] + ec + ["-keyout", "\(d)/server.key", "-out", "\(d)/server.csr", "-subj", "/CN=localhost"])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: "\(d)/san.ext", atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", "\(d)/server.csr", "-CA", "\(d)/ca.crt", "-CAkey", "\(d)/ca.key",
                     "-CAcreateserial", "-out", "\(d)/server.crt", "-days", "2", "-extfile", "\(d)/san.ext"])
        ca = "\(d)/ca.crt"
        wrongCA = "\(d)/wrong-ca.crt"
        serverCertificate = "\(d)/server.crt"
        serverKey = "\(d)/server.key"
    }
}
