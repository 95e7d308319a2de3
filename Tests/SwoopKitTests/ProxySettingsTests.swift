import Foundation
import Testing

@testable import SwoopKit

/// Parsing proxy URLs, `no_proxy` lists and picking a proxy per URL the way curl does (pure).
@Suite("Proxy settings")
struct ProxySettingsTests {
    // MARK: Parsing

    @Test(arguments: [
        ("http://proxy:3128", ProxySettings(kind: .http, host: "proxy", port: 3128)),
        ("proxy:3128", ProxySettings(kind: .http, host: "proxy", port: 3128)),
        ("proxy", ProxySettings(kind: .http, host: "proxy", port: 80)),
        ("http://proxy", ProxySettings(kind: .http, host: "proxy", port: 80)),
        ("http://proxy:8080/", ProxySettings(kind: .http, host: "proxy", port: 8080)),
        ("HTTP://Proxy.Example:8080", ProxySettings(kind: .http, host: "proxy.example", port: 8080)),
        ("  http://proxy:1  ", ProxySettings(kind: .http, host: "proxy", port: 1)),
        ("socks5://10.0.0.1", ProxySettings(kind: .socks5, host: "10.0.0.1", port: 1080)),
        ("socks5h://gate:9050", ProxySettings(kind: .socks5h, host: "gate", port: 9050)),
        ("http://[::1]:3128", ProxySettings(kind: .http, host: "::1", port: 3128)),
        ("http://[FE80::1]", ProxySettings(kind: .http, host: "fe80::1", port: 80)),
        ("http://user:secret@proxy:3128", ProxySettings(kind: .http, host: "proxy", port: 3128, username: "user", password: "secret")),
        ("http://us%40er:p%3Ass%2F@proxy:1", ProxySettings(kind: .http, host: "proxy", port: 1, username: "us@er", password: "p:ss/")),
        ("http://user@proxy", ProxySettings(kind: .http, host: "proxy", port: 80, username: "user", password: "")),
        ("http://user:pa@ss@proxy:2", ProxySettings(kind: .http, host: "proxy", port: 2, username: "user", password: "pa@ss")),
        ("user:pw@proxy:3", ProxySettings(kind: .http, host: "proxy", port: 3, username: "user", password: "pw")),
    ] as [(String, ProxySettings)])
    func parses(_ text: String, _ expected: ProxySettings) throws {
        #expect(try ProxySettings(parsing: text) == expected)
    }

    @Test(arguments: [
        ("", "it is empty"),
        ("ftp://proxy", "unsupported scheme ftp"),
        ("https://proxy", "unsupported scheme https"),
        ("socks4://proxy", "unsupported scheme socks4"),
        ("http://proxy:0", "the port 0 is not a number"),
        ("http://proxy:65536", "the port 65536"),
        ("http://proxy:abc", "the port abc"),
        ("http://proxy:+80", "the port +80"),
        ("http://proxy:", "the port is missing"),
        ("http://:3128", "names no host"),
        ("http://proxy/path", "no path"),
        ("http://proxy?x=1", "no path"),
        ("http://::1:3128", "in brackets"),
        ("http://[::1", "no closing ]"),
        ("http://[zz]:1", "is not an IPv6 address"),
        ("http://pro xy:1", "is not a host name"),
        ("http://%zz@proxy", "percent-encoded"),
        ("socks5://user:pw@proxy", "SOCKS5 proxy authentication is not supported"),
    ] as [(String, String)])
    func rejects(_ text: String, _ reason: String) {
        do {
            _ = try ProxySettings(parsing: text, source: "https_proxy")
            Issue.record("\(text) parsed")
        } catch let error as SwoopError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("in https_proxy"))
            #expect(error.message.contains(reason), "\(error.message)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func errorsAndDescriptionsNeverShowThePassword() throws {
        do {
            _ = try ProxySettings(parsing: "socks5://me:hunter2@proxy:1")
            Issue.record("parsed")
        } catch let error as SwoopError {
            #expect(!error.message.contains("hunter2"))
            #expect(error.message.contains("socks5://***@proxy:1"))
        }
        let proxy = try ProxySettings(parsing: "http://me:hunter2@proxy:1")
        #expect(proxy.description == "http://me:***@proxy:1")
        #expect(ProxySettings(kind: .socks5h, host: "::1", port: 9).description == "socks5h://[::1]:9")
    }

    // MARK: no_proxy

    @Test(arguments: [
        ("example.com", "example.com", 80, true),
        ("example.com", "a.example.com", 80, true),
        ("example.com", "a.b.example.com", 443, true),
        ("example.com", "badexample.com", 80, false),
        (".example.com", "example.com", 80, true),
        (".example.com", "a.example.com", 80, true),
        ("EXAMPLE.com", "a.Example.COM", 80, true),
        ("example.com.", "example.com", 80, true),
        ("example.com", "example.com.", 80, true),
        ("example.com", "example.org", 80, false),
        ("*", "anything.at.all", 1, true),
        (" * ", "anything", 1, true),
        ("a.com,*", "b.com", 80, false),
        ("a.com, b.com", "b.com", 80, true),
        ("a.com b.com\tc.com", "c.com", 80, true),
        ("a.com,,b.com", "b.com", 80, true),
        ("", "example.com", 80, false),
        ("localhost", "localhost", 8080, true),
        ("127.0.0.1", "127.0.0.1", 8080, true),
        ("127.0.0.1", "127.0.0.2", 8080, false),
        ("0.0.1", "127.0.0.1", 80, false),
        ("10.0.0.0/8", "10.1.2.3", 80, false),
        ("::1", "[::1]", 80, true),
        ("[::1]", "::1", 80, true),
        ("[::1]:8080", "[::1]", 8080, true),
        ("[::1]:8080", "[::1]", 80, false),
        ("example.com:8080", "example.com", 8080, true),
        ("example.com:8080", "example.com", 80, false),
        ("example.com:8080", "a.example.com", 8080, true),
        ("127.0.0.1:443", "127.0.0.1", 443, true),
        ("127.0.0.1:443", "127.0.0.1", 80, false),
        ("example.com:x", "example.com", 80, false),
    ] as [(String, String, Int, Bool)])
    func noProxy(_ list: String, _ host: String, _ port: Int, _ matches: Bool) {
        #expect(NoProxyList(list).matches(host: host, port: port) == matches)
    }

    // MARK: Choosing

    /// What the selector picks for each URL, as `proxy-host:port` or `direct`.
    private func picks(
        url: String? = nil, noProxy: String? = nil, useEnvironment: Bool = true, _ environment: [String: String],
        for urls: [String]
    ) throws -> [String] {
        var options = Configuration.Proxy()
        options.url = url
        options.noProxy = noProxy
        options.useEnvironment = useEnvironment
        let selector = try ProxySelector(options, environment: environment)
        return urls.map { text in
            guard let url = URL(string: text) else { return "bad URL" }
            return selector.proxy(for: url).map { "\($0.host):\($0.port)" } ?? "direct"
        }
    }

    private let both = ["http://origin/a", "https://origin/a"]

    @Test func nothingSetMeansDirect() throws {
        #expect(try picks([:], for: both) == ["direct", "direct"])
    }

    @Test func schemeVariablesAsCurlReadsThem() throws {
        #expect(try picks(["http_proxy": "h:1"], for: both) == ["h:1", "direct"])
        #expect(try picks(["https_proxy": "s:2"], for: both) == ["direct", "s:2"])
        #expect(try picks(["HTTPS_PROXY": "S:2"], for: both) == ["direct", "s:2"])
        #expect(try picks(["https_proxy": "s:2", "HTTPS_PROXY": "S:3"], for: both) == ["direct", "s:2"])
        // HTTP_PROXY is never read: a CGI program gets a request's `Proxy:` header under that name.
        #expect(try picks(["HTTP_PROXY": "evil:1"], for: both) == ["direct", "direct"])
    }

    @Test func allProxyIsTheFallback() throws {
        #expect(try picks(["all_proxy": "a:1"], for: both) == ["a:1", "a:1"])
        #expect(try picks(["ALL_PROXY": "A:1"], for: both) == ["a:1", "a:1"])
        #expect(try picks(["all_proxy": "a:1", "ALL_PROXY": "b:1"], for: both) == ["a:1", "a:1"])
        #expect(try picks(["all_proxy": "a:1", "http_proxy": "h:1"], for: both) == ["h:1", "a:1"])
        #expect(try picks(["ALL_PROXY": "a:1", "HTTP_PROXY": "evil:1"], for: both) == ["a:1", "a:1"])
        // Set but empty: no proxy, and the search ends there.
        #expect(try picks(["all_proxy": "a:1", "https_proxy": ""], for: both) == ["a:1", "direct"])
    }

    @Test func explicitProxyOverridesTheEnvironment() throws {
        let env = ["http_proxy": "h:1", "https_proxy": "s:1"]
        #expect(try picks(url: "socks5h://x:5", env, for: both) == ["x:5", "x:5"])
        #expect(try picks(url: "", env, for: both) == ["direct", "direct"])
        #expect(try picks(url: "x:5", useEnvironment: false, [:], for: both) == ["x:5", "x:5"])
    }

    @Test func noProxyAppliesToEveryChoice() throws {
        let urls = ["http://origin/a", "https://a.internal/b", "http://127.0.0.1:8080/", "https://other/"]
        let env = ["all_proxy": "p:1", "no_proxy": ".internal,127.0.0.1"]
        #expect(try picks(env, for: urls) == ["p:1", "direct", "direct", "p:1"])
        // no_proxy from the environment also applies to --proxy, as in curl.
        #expect(try picks(url: "x:5", env, for: urls) == ["x:5", "direct", "direct", "x:5"])
        #expect(try picks(["all_proxy": "p:1", "NO_PROXY": "origin"], for: urls) == ["direct", "p:1", "p:1", "p:1"])
        #expect(try picks(["all_proxy": "p:1", "no_proxy": "other", "NO_PROXY": "origin"], for: urls) == ["p:1", "p:1", "p:1", "direct"])
        #expect(try picks(["all_proxy": "p:1", "no_proxy": "*"], for: urls) == ["direct", "direct", "direct", "direct"])
        // The URL's default port counts for entries with a port.
        #expect(try picks(["all_proxy": "p:1", "no_proxy": "origin:80,other:443"], for: urls) == ["direct", "p:1", "p:1", "direct"])
    }

    @Test func noProxyOptionReplacesTheVariable() throws {
        let urls = ["http://origin/a", "http://other/a"]
        let env = ["all_proxy": "p:1", "no_proxy": "origin"]
        #expect(try picks(noProxy: "other", env, for: urls) == ["p:1", "direct"])
        #expect(try picks(noProxy: "", env, for: urls) == ["p:1", "p:1"])
        #expect(try picks(url: "x:5", noProxy: "*", env, for: urls) == ["direct", "direct"])
    }

    @Test func ignoringTheEnvironmentIgnoresAllOfIt() throws {
        let env = ["all_proxy": "p:1", "http_proxy": "h:1", "no_proxy": "origin"]
        #expect(try picks(useEnvironment: false, env, for: both) == ["direct", "direct"])
        #expect(try picks(url: "x:5", useEnvironment: false, env, for: both) == ["x:5", "x:5"])
    }

    @Test func badValuesFailAtOnceNamingTheirSource() throws {
        for (env, name) in [(["http_proxy": "ftp://x"], "http_proxy"), (["ALL_PROXY": "x:y"], "ALL_PROXY")] {
            #expect(throws: SwoopError.self) { try picks(env, for: []) }
            do {
                _ = try picks(env, for: [])
            } catch let error as SwoopError {
                #expect(error.message.contains("in \(name):"), "\(error.message)")
            }
        }
        do {
            _ = try picks(url: "socks9://x", [:], for: [])
            Issue.record("accepted")
        } catch let error as SwoopError {
            #expect(error.message == "invalid proxy socks9://x in the proxy setting: unsupported scheme socks9 (use http, socks5 or socks5h)")
        }
        // A bad variable that would never be read is not an error.
        #expect(try picks(url: "x:5", ["http_proxy": "ftp://x"], for: both) == ["x:5", "x:5"])
        #expect(try picks(useEnvironment: false, ["http_proxy": "ftp://x"], for: both) == ["direct", "direct"])
    }
}
