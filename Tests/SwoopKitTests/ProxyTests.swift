import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// Downloads through ``TestProxy``: HTTP CONNECT (with and without credentials), SOCKS5, no_proxy,
/// the environment, per-hop choice on redirects, HTTPS inside the tunnel.
@Suite("Downloads through a proxy", .timeLimit(.minutes(2)))
struct ProxyTests {
    /// Runs `body` with a fresh fixture and proxy, shutting both down after.
    private func withProxy(
        credentials: (username: String, password: String)? = nil, tls: TestCertificate? = nil,
        _ body: (Fixture, TestProxy) async throws -> Void
    ) async throws {
        let fixture = try await Fixture.make(tls: tls)
        let proxy: TestProxy
        do {
            proxy = try await TestProxy.start(credentials: credentials)
        } catch {
            await fixture.shutdown()
            throw error
        }
        do {
            try await body(fixture, proxy)
        } catch {
            try? await proxy.shutdown()
            await fixture.shutdown()
            throw error
        }
        try await proxy.shutdown()
        await fixture.shutdown()
    }

    /// The fixture's configuration with `proxy` and no environment.
    private func configuration(_ fixture: Fixture, proxy: String?, noProxy: String? = nil) -> Configuration {
        var configuration = fixture.configuration
        configuration.proxy.url = proxy
        configuration.proxy.noProxy = noProxy
        configuration.proxy.useEnvironment = false
        configuration.retry.maxRetries = 0
        return configuration
    }

    /// Whether the origin got every request on a connection the proxy opened.
    private func cameThroughProxy(_ requests: [RecordedRequest], _ proxy: TestProxy) -> Bool {
        let ports = Set(proxy.tunnels.compactMap(\.upstreamPort))
        return !requests.isEmpty && requests.allSatisfy { $0.clientPort.map(ports.contains) == true }
    }

    @Test func httpProxyWithCredentialsTunnelsAndKeepsThemFromTheOrigin() async throws {
        try await withProxy(credentials: ("us@er", "pa:ss")) { fixture, proxy in
            let body = fixture.serve("/through.bin", size: 300_000)
            var configuration = configuration(fixture, proxy: "http://us%40er:pa%3Ass@127.0.0.1:\(proxy.port)")
            configuration.headers = [("Proxy-Authorization", "Basic c2hvdWxkOm5vdA==")]
            var request = try fixture.request("/through.bin")
            request.headers = [("proxy-authorization", "Basic bGVhazpsZWFr")]
            let (result, _) = await fixture.download(request, configuration: configuration)
            #expect(throws: Never.self) { try result.get() }
            #expect(sha256(file: fixture.path("through.bin")) == sha256(body))

            let tunnels = proxy.tunnels
            #expect(!tunnels.isEmpty)
            for tunnel in tunnels {
                #expect(tunnel.kind == .httpConnect)
                #expect(tunnel.accepted)
                #expect(tunnel.host == "127.0.0.1" && tunnel.port == fixture.server.port)
                #expect(tunnel.proxyAuthorization == "Basic " + Data("us@er:pa:ss".utf8).base64EncodedString())
            }
            let requests = fixture.server.requests(to: "/through.bin")
            #expect(requests.allSatisfy { $0.header("Proxy-Authorization") == nil })
            #expect(cameThroughProxy(requests, proxy))
        }
    }

    @Test(arguments: ["socks5", "socks5h"])
    func socks5CarriesTheHostNameToTheProxy(scheme: String) async throws {
        try await withProxy { fixture, proxy in
            let body = fixture.serve("/s.bin", size: 200_000)
            let configuration = configuration(fixture, proxy: "\(scheme)://127.0.0.1:\(proxy.port)")
            // By address …
            let (byAddress, _) = await fixture.download(try fixture.request("/s.bin"), configuration: configuration)
            #expect(throws: Never.self) { try byAddress.get() }
            #expect(sha256(file: fixture.path("s.bin")) == sha256(body))
            #expect(proxy.tunnels.map(\.host) == ["127.0.0.1"])
            // … and by name, which the proxy resolves: AsyncHTTPClient resolves nothing itself.
            let named = try DownloadRequest(
                url: "http://localhost:\(fixture.server.port)/s.bin", directory: fixture.directory, fileName: "named.bin"
            )
            let (byName, _) = await fixture.download(named, configuration: configuration)
            #expect(throws: Never.self) { try byName.get() }
            #expect(sha256(file: fixture.path("named.bin")) == sha256(body))
            #expect(proxy.tunnels.map(\.host) == ["127.0.0.1", "localhost"])
            #expect(proxy.tunnels.allSatisfy { $0.kind == .socks5 && $0.accepted && $0.port == fixture.server.port })
            #expect(cameThroughProxy(fixture.server.requests(to: "/s.bin"), proxy))
        }
    }

    @Test func noProxyGoesDirect() async throws {
        try await withProxy { fixture, proxy in
            let body = fixture.serve("/direct.bin", size: 10_000)
            let configuration = configuration(fixture, proxy: proxy.httpURL, noProxy: "localhost, 127.0.0.1")
            let (result, _) = await fixture.download(try fixture.request("/direct.bin"), configuration: configuration)
            #expect(throws: Never.self) { try result.get() }
            #expect(sha256(file: fixture.path("direct.bin")) == sha256(body))
            #expect(proxy.tunnels.isEmpty)
        }
    }

    @Test func environmentVariablesPickTheProxy() async throws {
        try await withProxy { fixture, proxy in
            let body = fixture.serve("/env.bin", size: 10_000)
            var configuration = fixture.configuration
            configuration.proxy.environment = ["http_proxy": proxy.httpURL, "https_proxy": "never-used:1"]
            let (first, _) = await fixture.download(try fixture.request("/env.bin"), configuration: configuration)
            #expect(throws: Never.self) { try first.get() }
            #expect(sha256(file: fixture.path("env.bin")) == sha256(body))
            #expect(proxy.tunnels.count == 1)

            configuration.proxy.environment = ["all_proxy": proxy.httpURL, "NO_PROXY": "127.0.0.1"]
            let (second, _) = await fixture.download(try fixture.request("/env.bin", fileName: "env2.bin"), configuration: configuration)
            #expect(throws: Never.self) { try second.get() }
            #expect(proxy.tunnels.count == 1)
        }
    }

    @Test func eachRedirectHopPicksItsOwnProxy() async throws {
        try await withProxy { fixture, proxy in
            let other = try await TestServer.start(host: "127.0.0.2")
            defer { Task { try? await other.shutdown() } }
            let body = Resource.random(size: 20_000, seed: 9)
            other.serve("/final.bin", Resource(body: body, etag: "\"f\""))
            fixture.server.setDefault("/hop", .redirect(location: other.url("/final.bin")))
            let configuration = configuration(fixture, proxy: proxy.httpURL, noProxy: "127.0.0.2")
            let (result, _) = await fixture.download(try fixture.request("/hop", fileName: "hop.bin"), configuration: configuration)
            #expect(throws: Never.self) { try result.get() }
            #expect(sha256(file: fixture.path("hop.bin")) == sha256(body))
            #expect(proxy.tunnels.map(\.port) == [fixture.server.port])
            #expect(other.requests(to: "/final.bin").count == 1)
        }
    }

    @Test func proxyAuthenticationRequiredIsAClearErrorNamingTheProxy() async throws {
        try await withProxy(credentials: ("user", "right")) { fixture, proxy in
            fixture.serve("/auth.bin", size: 1000)
            for (url, reason) in [
                (proxy.httpURL, "it needs credentials (put them in the proxy URL)"),
                ("http://user:wrong@127.0.0.1:\(proxy.port)", "it refused the credentials"),
            ] {
                let (result, _) = await fixture.download(try fixture.request("/auth.bin"), configuration: configuration(fixture, proxy: url))
                guard case .failure(let error) = result else {
                    Issue.record("downloaded through a proxy that wants credentials")
                    continue
                }
                #expect(error.code == .network)
                #expect(!error.isRetryable)
                let shown = try ProxySettings(parsing: url).description
                #expect(error.message.hasPrefix("proxy \(shown) answered 407 Proxy Authentication Required for \(fixture.server.url("/auth.bin"))"))
                #expect(error.message.hasSuffix(reason))
                #expect(!error.message.contains("wrong"))
            }
            #expect(proxy.tunnels.count == 2)
            #expect(proxy.tunnels.allSatisfy { !$0.accepted })
            #expect(fixture.server.requests.isEmpty)
        }
    }

    @Test func unreachableProxyIsNamed() async throws {
        let fixture = try await Fixture.make()
        defer { fixture.stop() }
        // A port held but not listening: refused, and no other test's server can take it meanwhile
        // (a stopped proxy's port was taken by another test's proxy once, in a full run).
        let held = try TestPort(listening: false)
        let port = held.port
        defer { withExtendedLifetime(held) {} }
        fixture.serve("/x.bin", size: 100)
        let (result, _) = await fixture.download(try fixture.request("/x.bin"), configuration: configuration(fixture, proxy: "127.0.0.1:\(port)"))
        guard case .failure(let error) = result else {
            Issue.record("downloaded through a proxy that is not there")
            return
        }
        #expect(error.message.hasSuffix("(through proxy http://127.0.0.1:\(port))"), "\(error.message)")
    }

    @Test func httpsThroughConnect() async throws {
        let certificate = try TestCertificate.makeSelfSigned()
        try await withProxy(tls: certificate) { fixture, proxy in
            let body = fixture.serve("/secure.bin", size: 100_000)
            var configuration = configuration(fixture, proxy: proxy.httpURL)
            configuration.tls.caCertificatePath = certificate.certificatePath
            let (result, _) = await fixture.download(try fixture.request("/secure.bin"), configuration: configuration)
            #expect(throws: Never.self) { try result.get() }
            #expect(sha256(file: fixture.path("secure.bin")) == sha256(body))
            #expect(proxy.tunnels.map(\.port) == [fixture.server.port])
            #expect(cameThroughProxy(fixture.server.requests(to: "/secure.bin"), proxy))
        }
    }

    @Test func fetchGoesThroughTheProxyToo() async throws {
        try await withProxy { fixture, proxy in
            let body = fixture.serve("/small.json", size: 500)
            let manager = try DownloadManager(configuration: configuration(fixture, proxy: "socks5h://127.0.0.1:\(proxy.port)"))
            let data = try await manager.data(from: fixture.server.url("/small.json"))
            try await manager.shutdown()
            #expect(sha256(Array(data)) == sha256(body))
            #expect(proxy.tunnels.count == 1)
        }
    }

    @Test func badProxyFailsTheManagerAtOnce() async throws {
        var configuration = Configuration()
        configuration.proxy.environment = ["https_proxy": "socks5://u:p@proxy"]
        #expect(throws: SwoopError.self) { try DownloadManager(configuration: configuration) }
        configuration.proxy.useEnvironment = false
        let manager = try DownloadManager(configuration: configuration)
        try await manager.shutdown()
    }
}
