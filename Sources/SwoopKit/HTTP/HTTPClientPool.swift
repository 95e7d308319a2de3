import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers

/// The manager's HTTP clients: one for direct connections and one per proxy in use, made lazily
/// with the same settings. AsyncHTTPClient sets the proxy per client, and `no_proxy` or a redirect
/// to another host can change the proxy from one request (or hop) to the next.
///
/// Slow downloads (a rate limit under ``slowRate``) get clients of their own that read the socket
/// in small pieces (``slowReadSize``). AsyncHTTPClient reads a few pieces ahead of its reader, and
/// its idle timeout counts from the last socket read, not from the last time the reader asked: with
/// 256 KiB reads a download held to 10 KiB/s would sit on its read-ahead for over a minute and time
/// out. With 8 KiB reads the same read-ahead drains in seconds at rates down to about 1 KiB/s.
final class HTTPClientPool: Sendable {
    /// A rate limit under this many bytes per second makes a download slow.
    static let slowRate = 256 << 10
    /// The socket read size for slow downloads.
    static let slowReadSize = 8 << 10

    private struct Key: Hashable {
        var proxy: ProxySettings?
        var slow: Bool
        /// A download's own timeouts (AsyncHTTPClient sets them per client).
        var timeouts: Configuration.Timeouts
        /// Whether certificates go unchecked (a download's own `insecure`).
        var insecure: Bool
    }

    private struct State {
        var clients: [Key: HTTPClient]
        var isShutDown = false
    }

    /// Picks the proxy for each URL.
    let selector: ProxySelector
    private let configuration: Configuration
    private let state: NIOLockedValueBox<State>

    /// Reads the proxy settings and makes the direct client.
    ///
    /// - Throws: ``SwoopError`` when a proxy URL (option or environment) is not valid or the TLS
    ///   configuration cannot be loaded.
    init(_ configuration: Configuration) throws {
        self.configuration = configuration
        selector = try ProxySelector(
            configuration.proxy, environment: configuration.proxy.environment ?? ProcessInfo.processInfo.environment
        )
        // Made now so that a bad TLS setting fails here, not on the first request.
        let direct = try HTTPClientFactory.make(configuration)
        let key = Key(proxy: nil, slow: false, timeouts: configuration.timeouts, insecure: configuration.tls.insecure)
        state = NIOLockedValueBox(State(clients: [key: direct]))
    }

    /// The client for a URL (made on first use) and the proxy it goes through, if any.
    ///
    /// - Parameters:
    ///   - slow: For a download held under ``slowRate``: small socket reads.
    ///   - settings: The configuration of the download, when its own settings change the proxy,
    ///     the timeouts or certificate checks (``DownloadSettings``); `nil` uses the pool's.
    /// - Throws: `HTTPClientError.alreadyShutdown` after ``shutdown()``, as a shut-down client would;
    ///   ``SwoopError`` for a download's proxy setting that is not valid.
    func client(for url: URL, slow: Bool = false, settings: Configuration? = nil) throws -> (client: HTTPClient, proxy: ProxySettings?) {
        let settings = settings ?? configuration
        let proxy = try settings.proxy == configuration.proxy
            ? selector.proxy(for: url)
            : ProxySelector(settings.proxy, environment: settings.proxy.environment ?? ProcessInfo.processInfo.environment).proxy(for: url)
        let key = Key(proxy: proxy, slow: slow, timeouts: settings.timeouts, insecure: settings.tls.insecure)
        return try state.withLockedValue { state in
            guard !state.isShutDown else { throw HTTPClientError.alreadyShutdown }
            if let client = state.clients[key] { return (client, proxy) }
            var made = configuration
            made.timeouts = settings.timeouts
            made.tls.insecure = settings.tls.insecure
            let client = try HTTPClientFactory.make(
                made, proxy: proxy.map(Self.clientProxy), readSize: slow ? Self.slowReadSize : nil
            )
            state.clients[key] = client
            return (client, proxy)
        }
    }

    /// A pool dropped without ``shutdown()`` (its manager never shut down, as when a caller's code
    /// threw first) shuts its clients down in the background: AsyncHTTPClient stops a debug process
    /// that drops a client still running.
    deinit {
        let clients = state.withLockedValue { state in state.isShutDown ? [] : Array(state.clients.values) }
        for client in clients {
            Task { try? await client.shutdown() }
        }
    }

    /// Shuts every client down; later requests fail. A second call does nothing.
    func shutdown() async throws {
        let clients = state.withLockedValue { state in
            state.isShutDown = true
            defer { state.clients = [:] }
            return Array(state.clients.values)
        }
        var failure: (any Error)?
        for client in clients {
            do { try await client.shutdown() } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    /// AsyncHTTPClient's form of a proxy. Credentials go only into the proxy handshake: the
    /// `CONNECT` request's `Proxy-Authorization`, never a request to the origin.
    static func clientProxy(_ proxy: ProxySettings) -> HTTPClient.Configuration.Proxy {
        switch proxy.kind {
        case .http:
            let authorization = proxy.username.map { HTTPClient.Authorization.basic(username: $0, password: proxy.password ?? "") }
            return .server(host: proxy.host, port: proxy.port, authorization: authorization)
        case .socks5, .socks5h:
            return .socksServer(host: proxy.host, port: proxy.port)
        }
    }
}
