import Foundation
import SwoopTesting
import Testing

/// `swoop get` and `swoop fetch` through ``TestProxy``: options, environment variables, errors.
@Suite("swoop through a proxy", .timeLimit(.minutes(2)))
struct ProxyCommandTests {
    /// A server with `/p.bin`, a proxy and a fresh directory.
    private struct Setup {
        let server: TestServer
        let proxy: TestProxy
        let root: String
        let body: [UInt8]

        static func make(credentials: (username: String, password: String)? = nil) async throws -> Setup {
            let server = try await TestServer.start()
            let proxy = try await TestProxy.start(credentials: credentials)
            let body = Resource.random(size: 120_000, seed: 11)
            server.serve("/p.bin", Resource(body: body, etag: "\"p\""))
            let root = try makeTemporaryDirectory("swoop-proxy")
            return Setup(server: server, proxy: proxy, root: root, body: body)
        }

        func get(_ extra: [String], name: String = "p.bin", environment: [String: String] = [:]) async throws -> SwoopBinary.Result {
            try await SwoopBinary.run(
                ["get", "--state-dir", root + "/state", "-d", root, "-o", name, "--retries", "0"] + extra + [server.url("/p.bin")],
                in: root, environment: environment
            )
        }

        func stop() {
            let (server, proxy) = (server, proxy)
            Task {
                try? await proxy.shutdown()
                try? await server.shutdown()
            }
        }
    }

    @Test func environmentVariablesAndTheOptionsThatOverrideThem() async throws {
        let setup = try await Setup.make()
        defer { setup.stop() }
        let environment = ["http_proxy": setup.proxy.httpURL]

        let viaEnvironment = try await setup.get([], name: "a.bin", environment: environment)
        #expect(viaEnvironment.status == 0, "\(viaEnvironment.stderr)")
        #expect(sha256Hex(file: setup.root + "/a.bin") == sha256Hex(setup.body))
        #expect(setup.proxy.tunnels.map(\.port) == [setup.server.port])

        // HTTP_PROXY is not read (curl's rule), --no-proxy-env and --noproxy skip the proxy.
        for (extra, name, env) in [
            ([String](), "b.bin", ["HTTP_PROXY": setup.proxy.httpURL]),
            (["--no-proxy-env"], "c.bin", environment),
            (["--noproxy", "127.0.0.1"], "d.bin", environment),
            ([], "e.bin", environment.merging(["no_proxy": "localhost,127.0.0.1"]) { $1 }),
        ] {
            let direct = try await setup.get(extra, name: name, environment: env)
            #expect(direct.status == 0, "\(direct.stderr)")
            #expect(sha256Hex(file: setup.root + "/" + name) == sha256Hex(setup.body))
        }
        #expect(setup.proxy.tunnels.count == 1)
    }

    /// `--proxy` is stored with the download: interrupted while it waits to retry, it continues
    /// through the same proxy on a bare `swoop resume` that names none (and `ls ID` shows it, its
    /// password masked).
    @Test func aStoredProxyIsUsedByAResumeThatNamesNone() async throws {
        let setup = try await Setup.make()
        defer { setup.stop() }
        setup.server.enqueue("/p.bin", .status(503, headers: [("Retry-After", "30")]))
        let state = setup.root + "/state"
        let proxy = "http://me:pw@127.0.0.1:\(setup.proxy.port)"
        let running = try SwoopBinary.Running(
            ["get", "--state-dir", state, "-d", setup.root, "--proxy", proxy, setup.server.url("/p.bin")], directory: setup.root
        )
        #expect(await eventually { setup.server.requests(to: "/p.bin").count == 1 })
        running.signal(SIGINT)
        #expect(await running.wait().status == 130)
        #expect(setup.proxy.tunnels.count == 1)

        let listed = try await SwoopBinary.run(["ls", "--state-dir", state, "--json"], in: setup.root)
        let id = try #require((try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])?.first?["id"] as? String)
        let details = try await SwoopBinary.run(["ls", "--state-dir", state, id], in: setup.root)
        #expect(details.stdoutLines.contains("options: proxy http://***@127.0.0.1:\(setup.proxy.port)"), "\(details.stdout)")

        let resumed = try await SwoopBinary.run(["resume", "--state-dir", state], in: setup.root, environment: [:])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(sha256Hex(file: setup.root + "/p.bin") == sha256Hex(setup.body))
        #expect(setup.proxy.tunnels.count == 2)
    }

    @Test func explicitProxyWithCredentialsNeverReachesTheOrigin() async throws {
        let setup = try await Setup.make(credentials: ("me", "s3cret"))
        defer { setup.stop() }
        let result = try await setup.get(
            ["--proxy", "http://me:s3cret@127.0.0.1:\(setup.proxy.port)", "-H", "Proxy-Authorization: Basic bGVhazpsZWFr"],
            environment: ["all_proxy": "socks5://127.0.0.1:1"]
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(sha256Hex(file: setup.root + "/p.bin") == sha256Hex(setup.body))
        #expect(setup.proxy.tunnels.first?.proxyAuthorization == "Basic " + Data("me:s3cret".utf8).base64EncodedString())
        let requests = setup.server.requests(to: "/p.bin")
        #expect(!requests.isEmpty)
        #expect(requests.allSatisfy { $0.header("Proxy-Authorization") == nil })
    }

    @Test func proxyAuthenticationRequiredExitsWithFourAndOneLine() async throws {
        let setup = try await Setup.make(credentials: ("me", "s3cret"))
        defer { setup.stop() }
        let result = try await setup.get(["--proxy", "127.0.0.1:\(setup.proxy.port)"])
        #expect(result.status == 4)
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("swoop: error: proxy http://127.0.0.1:\(setup.proxy.port) answered 407 Proxy Authentication Required"))
        #expect(setup.server.requests.isEmpty)
    }

    @Test func badProxyValuesExitWithTwoAndOneLine() async throws {
        let setup = try await Setup.make()
        defer { setup.stop() }
        let option = try await setup.get(["--proxy", "ftp://me:pw@proxy"])
        #expect(option.status == 2)
        #expect(option.stderrLines == ["swoop: error: invalid proxy ftp://***@proxy in --proxy: unsupported scheme ftp (use http, socks5 or socks5h)"])

        let variable = try await setup.get([], environment: ["https_proxy": "proxy:99999"])
        #expect(variable.status == 2)
        #expect(variable.stderrLines == ["swoop: error: invalid proxy proxy:99999 in https_proxy: the port 99999 is not a number from 1 to 65535"])

        // Commands that make no requests do not care.
        let list = try await SwoopBinary.run(
            ["ls", "--state-dir", setup.root + "/state"], in: setup.root, environment: ["https_proxy": "proxy:99999", "http_proxy": "proxy:99999"]
        )
        #expect(list.status == 0, "\(list.stderr)")
        #expect(setup.server.requests.isEmpty)

        // Nor does a download told to ignore the environment, or given a proxy of its own ("" for none).
        for (name, option) in [("n.bin", ["--no-proxy-env"]), ("e.bin", ["--proxy", ""])] {
            let ignored = try await setup.get(option, name: name, environment: ["http_proxy": "proxy:99999"])
            #expect(ignored.status == 0, "\(ignored.stderr)")
            #expect(sha256Hex(file: setup.root + "/" + name) == sha256Hex(setup.body))
        }
    }

    @Test func fetchHonoursTheProxy() async throws {
        let setup = try await Setup.make()
        defer { setup.stop() }
        let viaOption = try await SwoopBinary.run(
            ["fetch", "--no-cache", "--proxy", setup.proxy.socksURL, setup.server.url("/p.bin")], in: setup.root, environment: [:]
        )
        #expect(viaOption.status == 0, "\(viaOption.stderr)")
        #expect(sha256Hex(viaOption.stdoutBytes) == sha256Hex(setup.body))
        let viaEnvironment = try await SwoopBinary.run(
            ["fetch", "--no-cache", setup.server.url("/p.bin")], in: setup.root, environment: ["all_proxy": setup.proxy.httpURL]
        )
        #expect(viaEnvironment.status == 0, "\(viaEnvironment.stderr)")
        #expect(setup.proxy.tunnels.map(\.kind) == [.socks5, .httpConnect])
    }
}
