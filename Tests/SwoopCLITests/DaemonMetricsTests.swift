import Foundation
import SwoopTesting
import Testing

/// `/metrics`: Prometheus' text format, for the secret as a bearer token only.
@Suite("swoop daemon: /metrics (the binary)", .timeLimit(.minutes(2)))
struct DaemonMetricsTests {
    static func scrape(_ daemon: DaemonFixture, authorization: String?) async throws -> RawHTTP.Reply {
        try await RawHTTP.send(
            port: daemon.port,
            request: WebPageServingTests.get("/metrics", port: daemon.port, headers: authorization.map { ["Authorization: \($0)"] } ?? [])
        )
    }

    /// The value of the sample `name` (with its labels, as written) in `text`.
    static func sample(_ name: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test func metricsNeedTheSecretAsABearerToken() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        for authorization in [nil, "Bearer wrong", "Basic czNjcmV0", "s3cret"] {
            let started = ContinuousClock.now
            let reply = try await Self.scrape(daemon, authorization: authorization)
            // As slow as a wrong RPC token: one guess a second.
            #expect(ContinuousClock.now - started >= .milliseconds(950))
            #expect(reply.status == 401, "\(authorization ?? "none")")
            #expect(WebPageServingTests.header("WWW-Authenticate", in: reply) == "Bearer")
            #expect(!reply.text.contains("swoop_"))
        }
    }

    @Test func downloadsBytesRetriesFailuresAndCallsAreCounted() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let body = Resource.random(size: 300_000, seed: 11)
        server.serve("/ok.bin", Resource(body: body, etag: "\"v1\""))
        server.serve("/flaky.bin", Resource(body: Resource.random(size: 1000, seed: 12), etag: "\"f\""))
        // Two retries: after a 503, then (attempts counted from 1 again after progress) after a
        // connection cut short.
        server.enqueue("/flaky.bin", .status(503))
        server.enqueue("/flaky.bin", .cutAfter(bytes: 400))
        let daemon = try await DaemonFixture.start(extra: ["--retry-wait", "0.05"])
        defer { Task { _ = await daemon.stop() } }
        var gids: [String] = []
        for path in ["/ok.bin", "/flaky.bin", "/missing.bin"] {
            gids.append(try #require(try await daemon.result("aria2.addUri", [server.url(path)]) as? String))
        }
        #expect(try await daemon.waitFor(gids[0], "complete"))
        #expect(try await daemon.waitFor(gids[1], "complete"))
        #expect(try await daemon.waitFor(gids[2], "error"))

        let reply = try await Self.scrape(daemon, authorization: "Bearer s3cret")
        #expect(reply.status == 200)
        #expect(WebPageServingTests.header("Content-Type", in: reply) == "text/plain; version=0.0.4; charset=utf-8")
        let text = reply.text
        #expect(Self.sample(#"swoop_downloads{state="completed"}"#, in: text) == 2, "\(text)")
        #expect(Self.sample(#"swoop_downloads{state="failed"}"#, in: text) == 1)
        #expect(Self.sample(#"swoop_downloads{state="active"}"#, in: text) == 0)
        // Every byte received counts, the 400 of the cut answer too (the resume asks for the rest).
        #expect(Self.sample("swoop_downloaded_bytes_total", in: text) == 301_000)
        #expect(Self.sample("swoop_retries_total", in: text) == 2)
        #expect(text.contains(#"swoop_failures_total{reason="#))
        #expect(text.split(separator: "\n").filter { $0.hasPrefix("swoop_failures_total{") }.compactMap { Double($0.split(separator: " ").last ?? "") } == [1])
        #expect(Self.sample("swoop_download_speed_bytes_per_second", in: text) != nil)
        #expect(Self.sample(#"swoop_rpc_requests_total{method="aria2.addUri"}"#, in: text) == 3)
        #expect((Self.sample(#"swoop_rpc_requests_total{method="aria2.tellStatus"}"#, in: text) ?? 0) >= 3)
        #expect(Self.sample(#"swoop_rpc_message_duration_seconds_count{method="aria2.addUri"}"#, in: text) == 3)
        #expect(text.contains(#"swoop_rpc_message_duration_seconds_bucket{method="aria2.addUri",le="+Inf"} 3"#))
        #expect(text.contains("# HELP swoop_downloaded_bytes_total "))
    }
}
