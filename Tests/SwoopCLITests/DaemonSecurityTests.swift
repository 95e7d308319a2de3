import Foundation
import SwoopTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("swoop daemon: secure by default (the binary)", .timeLimit(.minutes(2)))
struct DaemonSecurityTests {
    func rpcBody(_ token: String?) -> [UInt8] {
        let params = token.map { #"["token:\#($0)"]"# } ?? "[]"
        return Array(#"{"jsonrpc":"2.0","id":1,"method":"aria2.getGlobalStat","params":\#(params)}"#.utf8)
    }

    @Test func aCallWithTheSecretIsAnsweredWhateverItsContentType() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        for headers in [[], ["Content-Type: text/plain"], ["Content-Type: application/json"]] {
            let reply = try await RawHTTP.send(port: daemon.port, request: RawHTTP.post(port: daemon.port, body: rpcBody("s3cret"), headers: headers))
            #expect(reply.status == 200, "\(headers)")
            #expect(reply.text.contains(#""numActive":"0""#))
        }
    }

    @Test func aWrongOrMissingTokenIsUnauthorizedAfterADelay() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        for token: String? in ["wrong", nil] {
            let started = ContinuousClock.now
            let reply = try await RawHTTP.send(port: daemon.port, request: RawHTTP.post(port: daemon.port, body: rpcBody(token)))
            #expect(ContinuousClock.now - started >= .milliseconds(950))
            #expect(reply.status == 400)
            #expect(reply.text == #"{"error":{"code":1,"message":"Unauthorized"},"id":1,"jsonrpc":"2.0"}"#)
        }
    }

    @Test func aForeignHostIsRefused() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        for host in ["evil.example:\(daemon.port)", "127.0.0.1.nip.io:\(daemon.port)", "localhost:1"] {
            let reply = try await RawHTTP.send(port: daemon.port, request: RawHTTP.post(port: daemon.port, body: rpcBody("s3cret"), host: host))
            #expect(reply.status == 403, "\(host)")
            #expect(reply.text.hasPrefix("Host '\(host)': this daemon answers only to its own address"))
        }
        for host in ["localhost:\(daemon.port)", "127.0.0.1:\(daemon.port)"] {
            let reply = try await RawHTTP.send(port: daemon.port, request: RawHTTP.post(port: daemon.port, body: rpcBody("s3cret"), host: host))
            #expect(reply.status == 200, "\(host)")
        }
    }

    @Test func aForeignOriginIsRefusedEvenForASimplePlainTextPost() async throws {
        let daemon = try await DaemonFixture.start(extra: ["--allow-origin", "https://ui.example.com"])
        defer { Task { _ = await daemon.stop() } }
        let foreign = ["Origin: https://evil.example", "Content-Type: text/plain"]
        let refused = try await RawHTTP.send(port: daemon.port, request: RawHTTP.post(port: daemon.port, body: rpcBody("s3cret"), headers: foreign))
        #expect(refused.status == 403)
        #expect(refused.text.hasPrefix("Origin 'https://evil.example' may not use this daemon"))
        for origin in ["http://127.0.0.1:\(daemon.port)", "http://localhost:\(daemon.port)", "https://ui.example.com"] {
            let allowed = try await RawHTTP.send(port: daemon.port, request: RawHTTP.post(port: daemon.port, body: rpcBody("s3cret"), headers: ["Origin: \(origin)"]))
            #expect(allowed.status == 200, "\(origin)")
            // The browser may hand the answer to that page.
            #expect(allowed.head.lowercased().contains("access-control-allow-origin: \(origin)"), "\(allowed.head)")
        }
        // The preflight of a JSON POST from an allowed origin; a foreign one is refused before.
        let preflight = { (origin: String) in
            Array("OPTIONS /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1:\(daemon.port)\r\nOrigin: \(origin)\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\nConnection: close\r\n\r\n".utf8)
        }
        let allowedPreflight = try await RawHTTP.send(port: daemon.port, request: preflight("https://ui.example.com"))
        #expect(allowedPreflight.status == 204)
        #expect(allowedPreflight.head.lowercased().contains("access-control-allow-headers: content-type"))
        #expect(try await RawHTTP.send(port: daemon.port, request: preflight("https://evil.example")).status == 403)
    }

    @Test func aWebSocketUpgradeFromAForeignOriginIsRefused() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        func upgrade(_ origin: String?) -> [UInt8] {
            var lines = [
                "GET /jsonrpc HTTP/1.1", "Host: 127.0.0.1:\(daemon.port)", "Upgrade: websocket", "Connection: Upgrade",
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
            ]
            if let origin { lines.append("Origin: \(origin)") }
            return Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
        }
        let refused = try await RawHTTP.send(port: daemon.port, request: upgrade("https://evil.example"))
        #expect(refused.status == 403)
        // The same upgrade from the daemon's own page, or from a program (no Origin), switches protocols.
        for origin: String? in ["http://127.0.0.1:\(daemon.port)", nil] {
            let accepted = try await RawHTTP.send(port: daemon.port, request: upgrade(origin), timeout: .seconds(2))
            #expect(accepted.status == 101, "\(origin ?? "no origin")")
        }
    }

    @Test func aHugeBodyIsRefusedWithoutBeingRead() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        // Only the head is sent: the refusal must come without waiting for 100 MiB.
        let head = Array("POST /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1:\(daemon.port)\r\nContent-Length: \(100 << 20)\r\n\r\n".utf8)
        let reply = try await RawHTTP.send(port: daemon.port, request: head, timeout: .seconds(5))
        #expect(reply.status == 413)
        #expect(reply.text.hasPrefix("the request body is 104857600 bytes; the most is 1048576"))
        // A chunked body over the cap is cut off too.
        let chunk = [UInt8](repeating: 0x20, count: 600_000)
        let size = String(chunk.count, radix: 16)
        var chunked = Array("POST /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1:\(daemon.port)\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".utf8)
        for _ in 0..<2 {
            chunked += Array("\(size)\r\n".utf8)
            chunked += chunk
            chunked += Array("\r\n".utf8)
        }
        chunked += Array("0\r\n\r\n".utf8)
        #expect(try await RawHTTP.send(port: daemon.port, request: chunked).status == 413)
    }

    @Test func noCallsOverGETAndNoOtherPaths() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        let get = Array("GET /jsonrpc?method=aria2.getVersion&id=1&jsoncallback=f HTTP/1.1\r\nHost: 127.0.0.1:\(daemon.port)\r\nConnection: close\r\n\r\n".utf8)
        let reply = try await RawHTTP.send(port: daemon.port, request: get)
        #expect(reply.status == 405)
        #expect(!reply.text.contains("version"))
        let other = Array("GET /rpc HTTP/1.1\r\nHost: 127.0.0.1:\(daemon.port)\r\nConnection: close\r\n\r\n".utf8)
        #expect(try await RawHTTP.send(port: daemon.port, request: other).status == 404)
    }

    @Test func aClientThatSendsNothingIsDisconnected() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        // Half a request head, then silence: closed by the head deadline, not held open.
        let started = ContinuousClock.now
        let reply = try await RawHTTP.send(port: daemon.port, request: Array("POST /jsonrpc HTTP/1.1\r\nHost: 127".utf8), timeout: .seconds(30))
        #expect(reply.status == 0)
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    @Test func aNonLoopbackAddressNeedsAnExplicitSecret() async throws {
        let (root, _, state) = try SwoopBinary.workspace("swoop-daemon-open")
        let refused = try await SwoopBinary.run(["daemon", "--listen", "0.0.0.0:0", "--state-dir", state, "-d", root], in: root)
        #expect(refused.status == 2)
        #expect(refused.stderrLines.last == "swoop: error: --listen 0.0.0.0:0: a daemon reachable from other machines needs a secret of your choosing (--secret or --secret-file)")
    }

    @Test func aSecretIsMadeOnceKeptPrivateAndShownOnce() async throws {
        let (root, _, state) = try SwoopBinary.workspace("swoop-daemon-secret")
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let first = try await DaemonFixture.start(root: root, secret: nil)
        let stopped = await first.stop()
        #expect(stopped.status == 0)
        let file = first.state + "/rpc-secret"
        let secret = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(secret.count == 48)
        #expect(first.secret == secret)
        #expect(stopped.stdoutLines.contains { $0.hasSuffix("/#token=\(secret)") })
        // The secret, and the database (which keeps -H headers), are private whatever the directory's mode.
        for path in [file, first.state + "/swoop.sqlite"] {
            var info = stat()
            #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600, "\(path)")
        }
        // daemon.json is gone once it stopped.
        #expect(!FileManager.default.fileExists(atPath: first.state + "/daemon.json"))
        let second = try await DaemonFixture.start(root: root, secret: nil)
        #expect(second.secret == secret)
        let result = await second.stop()
        #expect(!result.stdout.contains(secret))
    }

    @Test func oneDaemonPerStateDirectoryAndABusyPortIsNamed() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        let second = try await SwoopBinary.run(
            ["daemon", "--listen", "127.0.0.1:0", "--state-dir", daemon.state, "-d", daemon.downloads, "--secret", "x"], in: daemon.root)
        // In use by another swoop: 7, as a download another process holds.
        #expect(second.status == 7)
        #expect(second.stderrLines.last?.hasPrefix("swoop: error: a swoop daemon already runs on \(daemon.state) (pid \(daemon.running.pid)") == true)
        // The first one still answers, and its daemon.json is still there.
        #expect(try await daemon.result("aria2.getVersion") != nil)
        #expect(FileManager.default.fileExists(atPath: daemon.state + "/daemon.json"))
        let (root, out, state) = try SwoopBinary.workspace("swoop-daemon-port")
        let busy = try await SwoopBinary.run(
            ["daemon", "--listen", "127.0.0.1:\(daemon.port)", "--state-dir", state, "-d", out, "--secret", "x"], in: root)
        #expect(busy.status == 1)
        #expect(busy.stderrLines.last == "swoop: error: cannot listen on 127.0.0.1:\(daemon.port): Address already in use")
    }
}
