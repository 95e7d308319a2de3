import Foundation

/// A PEM certificate and private key on disk, for serving HTTPS from a ``TestServer``.
public struct TestCertificate: Sendable {
    /// The path of the PEM certificate.
    public let certificatePath: String
    /// The path of the PEM private key (unencrypted PKCS#8).
    public let keyPath: String

    /// Uses an existing certificate and key.
    ///
    /// - Parameters:
    ///   - certificatePath: The path of a PEM certificate (chain).
    ///   - keyPath: The path of its PEM private key.
    public init(certificatePath: String, keyPath: String) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
    }

    /// Makes a self-signed certificate for `127.0.0.1` and `localhost` in a fresh temporary directory.
    ///
    /// The certificate is its own CA (`basicConstraints CA:TRUE`), so a client trusts the server by
    /// taking ``certificatePath`` as its only root (`curl --cacert`, NIOSSL `trustRoots`). Its
    /// subject alternative names are `IP:127.0.0.1` and `DNS:localhost`; the key is P-256. It runs
    /// `/usr/bin/openssl` (or the first `openssl` on `PATH`); make one per test suite and reuse it.
    ///
    /// - Returns: The paths of the new certificate and key.
    /// - Throws: ``TestServerError`` with code `certificateGenerationFailed` when `openssl` is
    ///   missing or fails.
    public static func makeSelfSigned() throws -> TestCertificate {
        let directory = URL(fileURLWithPath: scratchPath("swoop-cert"), isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw TestServerError(
                code: .certificateGenerationFailed,
                message: "cannot create \(directory.path)",
                cause: error
            )
        }
        let certificate = TestCertificate(
            certificatePath: directory.appendingPathComponent("cert.pem").path,
            keyPath: directory.appendingPathComponent("key.pem").path
        )
        try runOpenSSL([
            "req", "-x509", "-nodes", "-days", "30",
            "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-keyout", certificate.keyPath, "-out", certificate.certificatePath,
            "-subj", "/CN=localhost",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,digitalSignature,keyCertSign",
            "-addext", "extendedKeyUsage=serverAuth",
        ])
        return certificate
    }

    private static func runOpenSSL(_ arguments: [String]) throws {
        let process = Process()
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["openssl"] + arguments
        }
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        do {
            try process.run()
        } catch {
            throw TestServerError(code: .certificateGenerationFailed, message: "cannot run openssl", cause: error)
        }
        // Read before waiting so a chatty openssl cannot block on a full pipe.
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = String(decoding: output, as: UTF8.self)
            throw TestServerError(
                code: .certificateGenerationFailed,
                message: "openssl exited with status \(process.terminationStatus): \(text)"
            )
        }
    }
}
