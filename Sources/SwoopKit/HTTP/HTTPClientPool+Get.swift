import AsyncHTTPClient
import Foundation
import Logging
import NIOCore

extension HTTPClientPool {
    /// Sends a GET the way Swoop sends every request: its own `User-Agent`, `Accept` and
    /// `Accept-Encoding: identity` first, then `headers` in order (a name given later replaces an
    /// earlier one; an empty value removes it), following redirects by ``RedirectTracker``'s rules (credentials stay with their
    /// origin, no https → http unless allowed, loops and limits). Each hop goes through the proxy
    /// ``ProxySelector`` picks for its URL.
    ///
    /// A `Proxy-Authorization` header among `headers` is dropped: AsyncHTTPClient tunnels through
    /// HTTP proxies with `CONNECT` and sends the request itself inside the tunnel, so the header would
    /// reach the origin, never the proxy. Proxy credentials belong in the proxy URL.
    ///
    /// - Returns: The first response that is not a redirect; its body is the caller's to read.
    /// - Throws: What AsyncHTTPClient throws; through a proxy, a ``SwoopError`` naming the proxy.
    /// - Parameter slow: The download is held under ``HTTPClientPool/slowRate``: use a client with
    ///   small socket reads.
    func swoopGet(
        _ url: URL, headers: [(name: String, value: String)], configuration: SwoopKit.Configuration, logger: Logger,
        slow: Bool = false
    ) async throws -> HTTPClientResponse {
        var redirects = RedirectTracker(original: url, policy: configuration.redirects)
        // An empty value removes a header, Swoop's own included.
        var merged = HTTPHeaderField.merged(
            [("User-Agent", configuration.userAgent), ("Accept", "*/*"), ("Accept-Encoding", "identity")], headers
        )
        if merged.contains(where: { $0.name.lowercased() == "proxy-authorization" }) {
            logger.debug("dropping Proxy-Authorization: it would reach the origin", metadata: ["request.url": "\(url.absoluteString)"])
            merged.removeAll { $0.name.lowercased() == "proxy-authorization" }
        }
        while true {
            // Every caller validates its URLs; this keeps a port NIO would trap on from ever reaching it.
            if let problem = DownloadRequest.portProblem(redirects.current) {
                throw SwoopError(.invalidURL, "invalid URL (\(problem)): \(redirects.current.absoluteString)")
            }
            var request = HTTPClientRequest(url: redirects.current.absoluteString)
            request.method = .GET
            // Each hop's own cookies and netrc login (never another host's).
            let hopHeaders = configuration.credentials.headers(for: redirects.current, adding: redirects.headers(merged))
            for header in hopHeaders {
                // Checked here too: a header stored by an older swoop (or edited on disk), a cookie or a
                // User-Agent reach this point without `-H`'s check, and NIO traps on a bad name.
                if let problem = HTTPHeaderField.problem(name: header.name, value: header.value) {
                    throw SwoopError(.invalidArgument, "cannot send the header '\(header.name)' to \(redirects.current.absoluteString): \(problem)")
                }
                request.headers.add(name: header.name, value: header.value)
            }
            let deadline = TimeAmount(configuration.timeouts.connect + configuration.timeouts.idle)
            let (httpClient, proxy) = try self.client(for: redirects.current, slow: slow, settings: configuration)
            let response: HTTPClientResponse
            do {
                response = try await httpClient.execute(request, timeout: deadline, logger: logger)
            } catch {
                guard let proxy else { throw error }
                throw Self.proxyError(error, proxy: proxy, url: redirects.current.absoluteString, timeouts: configuration.timeouts)
            }
            let status = Int(response.status.code)
            guard RedirectTracker.redirectStatuses.contains(status) else { return response }
            await response.body.drain()
            let target = try redirects.follow(status: status, location: response.headers.first(name: "Location"))
            logger.debug("redirect", metadata: ["request.url": "\(url.absoluteString)", "redirect.target": "\(target)"])
        }
    }

    /// An error met through a proxy, as a ``SwoopError`` that names the proxy (its credentials masked).
    /// Cancellation passes through unchanged.
    static func proxyError(_ error: any Error, proxy: ProxySettings, url: String, timeouts: Configuration.Timeouts) -> any Error {
        if error is CancellationError || error is SwoopError { return error }
        if let error = error as? HTTPClientError {
            if error == .cancelled { return error }
            if error == .proxyAuthenticationRequired {
                let reason = proxy.username == nil ? "it needs credentials (put them in the proxy URL)" : "it refused the credentials"
                return SwoopError(.network, "proxy \(proxy) answered 407 Proxy Authentication Required for \(url): \(reason)", cause: error)
            }
            if error == .invalidProxyResponse {
                return SwoopError(.network, "proxy \(proxy) refused the tunnel to \(url)", cause: error, isRetryable: true)
            }
            if error == .httpProxyHandshakeTimeout {
                return SwoopError(.timeout, "proxy \(proxy) did not open a tunnel to \(url) in time", cause: error, isRetryable: true)
            }
        }
        var classified = ErrorClassifier.classify(error, url: url, timeouts: timeouts)
        classified.message += " (through proxy \(proxy))"
        return classified
    }
}
