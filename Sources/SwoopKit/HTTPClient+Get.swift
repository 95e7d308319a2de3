import AsyncHTTPClient
import Foundation
import Logging
import NIOCore

extension HTTPClient {
    /// Sends a GET the way Swoop sends every request: its own `User-Agent`, `Accept` and
    /// `Accept-Encoding: identity` first, then `headers` in order (a name given later replaces an
    /// earlier one), following redirects by ``RedirectTracker``'s rules (credentials stay with their
    /// origin, no https → http unless allowed, loops and limits).
    ///
    /// - Returns: The first response that is not a redirect; its body is the caller's to read.
    func swoopGet(
        _ url: URL, headers: [(name: String, value: String)], configuration: SwoopKit.Configuration, logger: Logger
    ) async throws -> HTTPClientResponse {
        var redirects = RedirectTracker(original: url, policy: configuration.redirects)
        var merged: [(name: String, value: String)] = [
            ("User-Agent", configuration.userAgent), ("Accept", "*/*"), ("Accept-Encoding", "identity"),
        ]
        for header in headers {
            merged.removeAll { $0.name.lowercased() == header.name.lowercased() }
            merged.append(header)
        }
        while true {
            var request = HTTPClientRequest(url: redirects.current.absoluteString)
            request.method = .GET
            let hopHeaders = configuration.credentials.headers(for: redirects.current, adding: redirects.headers(merged))
            for header in hopHeaders {
                request.headers.add(name: header.name, value: header.value)
            }
            let deadline = TimeAmount(configuration.timeouts.connect + configuration.timeouts.idle)
            let response = try await execute(request, timeout: deadline, logger: logger)
            let status = Int(response.status.code)
            guard RedirectTracker.redirectStatuses.contains(status) else { return response }
            await Transfer.discard(response.body)
            let target = try redirects.follow(status: status, location: response.headers.first(name: "Location"))
            logger.debug("redirect", metadata: ["request.url": "\(url.absoluteString)", "redirect.target": "\(target)"])
        }
    }
}
