import Foundation
import SwoopTesting
import Testing

@Suite("swoop get over TLS", .timeLimit(.minutes(1)))
struct TLSCommandTests {
    @Test func verificationIsOnByDefaultAndCanBeWidenedOrLoudlySkipped() async throws {
        let certificate = try TestCertificate.makeSelfSigned()
        let server = try await TestServer.start(tls: certificate)
        defer { Task { try? await server.shutdown() } }
        server.serve("/s.bin", Resource(body: Resource.random(size: 50_000, seed: 5), etag: "\"t\""))
        let root = try makeTemporaryDirectory("swoop-tls")
        func get(_ extra: [String]) async throws -> SwoopBinary.Result {
            try await SwoopBinary.run(["get", "--state-dir", root + "/state", "-d", root, "--retries", "0"] + extra + [server.url("/s.bin")], in: root)
        }

        let refused = try await get([])
        #expect(refused.status == 4)
        #expect(refused.stderrLines.count == 1)
        // The engine says what happened; the command line adds which option changes it.
        #expect(refused.stderrLines == [
            "swoop: error: TLS error with \(server.url("/s.bin")): certificate verification failed (use --ca-certificate for a private CA)"
        ])
        #expect(!FileManager.default.fileExists(atPath: root + "/s.bin"))

        let trusted = try await get(["--ca-certificate", certificate.certificatePath])
        #expect(trusted.status == 0)
        #expect(trusted.stderr.isEmpty)

        try FileManager.default.removeItem(atPath: root + "/s.bin")
        let insecure = try await get(["-k", "--overwrite"])
        #expect(insecure.status == 0)
        #expect(insecure.stderrLines.first?.hasPrefix("swoop: warning: TLS certificate verification is OFF") == true)
    }

    /// https:// to a plain HTTP port: BoringSSL's WRONG_VERSION_NUMBER dump, in plain words.
    @Test func httpsToAPlainHTTPServerSaysSo() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let root = try makeTemporaryDirectory("swoop-tls")
        let url = server.url("/s.bin").replacingOccurrences(of: "http://", with: "https://")
        let result = try await SwoopBinary.run(["get", "--state-dir", root + "/state", "-d", root, "--retries", "0", url], in: root)
        #expect(result.status == 4)
        #expect(result.stderrLines == ["swoop: error: TLS error with \(url): the server did not answer in TLS (an http:// address?)"])
    }
}
