import Foundation
import SwoopTesting
import Testing

/// The web page as the daemon serves it: its files from the binary, with the security headers;
/// `/healthz` without a token; the daemon's Host and Origin rules for all of them.
@Suite("swoop daemon: the web page's files and /healthz (the binary)", .timeLimit(.minutes(2)))
struct WebPageServingTests {
    static let pageFiles = ["/", "/ui/style.css", "/ui/app.js", "/ui/format.js", "/ui/model.js", "/ui/rpc.js", "/ui/listview.js", "/ui/details.js", "/ui/icon.svg"]

    static func get(_ path: String, port: Int, headers: [String] = [], host: String? = nil) -> [UInt8] {
        let head = (["GET \(path) HTTP/1.1", "Host: \(host ?? "127.0.0.1:\(port)")", "Connection: close"] + headers)
            .joined(separator: "\r\n") + "\r\n\r\n"
        return Array(head.utf8)
    }

    /// The source file a path is served from.
    static func source(_ path: String) throws -> [UInt8] {
        let name = path == "/" ? "index.html" : String(path.dropFirst("/ui/".count))
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/SwoopDaemon/Web/\(name)")
        return Array(try Data(contentsOf: url))
    }

    static func header(_ name: String, in reply: RawHTTP.Reply) -> String? {
        reply.head.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
            .map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
    }

    @Test func everyFileIsServedByteForByteWithItsTypeAndTheSecurityHeaders() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        for path in Self.pageFiles {
            let reply = try await RawHTTP.send(port: daemon.port, request: Self.get(path, port: daemon.port))
            #expect(reply.status == 200, "\(path)")
            #expect(reply.body == (try Self.source(path)), "\(path)")
            let type = Self.header("Content-Type", in: reply)
            let expected = path == "/" ? "text/html; charset=utf-8" : path.hasSuffix(".css") ? "text/css; charset=utf-8"
                : path.hasSuffix(".svg") ? "image/svg+xml" : "text/javascript; charset=utf-8"
            #expect(type == expected)
            #expect(Self.header("Content-Security-Policy", in: reply)
                == "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
            #expect(Self.header("X-Content-Type-Options", in: reply) == "nosniff")
            #expect(Self.header("Referrer-Policy", in: reply) == "no-referrer")
        }
        let missing = try await RawHTTP.send(port: daemon.port, request: Self.get("/ui/../secret", port: daemon.port))
        #expect(missing.status == 404)
    }

    /// The policy forbids inline script: the page must not need any (no inline `<script>`, no
    /// `on…=` handler attributes, no `style=` attributes, no `javascript:` links).
    @Test func thePageHasNoInlineScriptOrStyle() throws {
        let html = String(decoding: try Self.source("/"), as: UTF8.self)
        let scripts = html.components(separatedBy: "<script").dropFirst()
        #expect(!scripts.isEmpty)
        #expect(scripts.allSatisfy { $0.prefix(while: { $0 != ">" }).contains("src=") && $0.drop(while: { $0 != ">" }).dropFirst().hasPrefix("</script>") })
        #expect(html.range(of: #"\son[a-z]+\s*="#, options: .regularExpression) == nil)
        #expect(!html.contains("style=") && !html.contains("<style") && !html.contains("javascript:"))
        // The controls the issue names, with their accessible names.
        #expect(html.contains(#"<label for="urls">URLs</label>"#))
        #expect(html.contains(#"<button type="submit">Add</button>"#))
    }

    @Test func healthzAnswersWithoutATokenAndSaysNothingMore() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        let reply = try await RawHTTP.send(port: daemon.port, request: Self.get("/healthz", port: daemon.port))
        #expect(reply.status == 200)
        #expect(reply.text == "ok\n")
    }

    @Test func thePageObeysTheDaemonsHostAndOriginRules() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        for path in Self.pageFiles + ["/healthz"] {
            let foreignHost = try await RawHTTP.send(port: daemon.port, request: Self.get(path, port: daemon.port, host: "evil.example:\(daemon.port)"))
            #expect(foreignHost.status == 403, "\(path)")
            #expect(foreignHost.text.hasPrefix("Host 'evil.example:\(daemon.port)': this daemon answers only to its own address"))
            let foreignOrigin = try await RawHTTP.send(port: daemon.port, request: Self.get(path, port: daemon.port, headers: ["Origin: https://evil.example"]))
            #expect(foreignOrigin.status == 403, "\(path)")
            #expect(foreignOrigin.body != (try? Self.source(path)))
        }
    }
}
