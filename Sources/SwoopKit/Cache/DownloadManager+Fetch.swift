import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

extension DownloadManager {
    /// Fetches a small resource into memory, through the disk cache when
    /// `configuration.cache.directory` is set.
    ///
    /// A fresh cached response is returned without a request. A stale one (or one marked `no-cache`)
    /// is revalidated with `If-None-Match` / `If-Modified-Since`: a `304` returns the cached bytes and
    /// refreshes the entry's freshness from the `304`'s headers; a `200` replaces it. Redirects are
    /// followed by the manager's rules; the cache key is `url` as given. A request `Cache-Control`
    /// in `headers` is honoured: `no-cache` or `max-age=0` revalidates, `no-store` bypasses the cache.
    /// One attempt is made: transient failures are not retried here.
    ///
    /// The body is returned as `Data` (what callers hand to decoders), at most
    /// `configuration.cache.maxEntryBytes` of it; a larger body stops the transfer.
    /// The call runs off the actor: fetches proceed side by side with each other and with downloads.
    ///
    /// - Parameters:
    ///   - url: An http or https URL.
    ///   - headers: Extra request headers, after the configured ones (a name given here replaces theirs).
    /// - Returns: The body of the `2xx` response (cached or not).
    /// - Throws: ``SwoopError``: ``SwoopError/Code/httpStatus`` naming the status and URL for a non-2xx
    ///   answer, ``SwoopError/Code/invalidArgument`` for a body over the limit, a file-system error naming
    ///   the path when the cache cannot be written, network and redirect errors as for downloads.
    public nonisolated func data(from url: String, headers: [(name: String, value: String)] = []) async throws -> Data {
        let target = try DownloadRequest.validate(url)
        let requestControl = CacheControl(Self.joined(headers, named: "cache-control"))
        let settings = configuration.cache
        let cache = requestControl.noStore ? nil : settings.directory.map { ResponseCache(directory: $0, maxBytes: settings.maxBytes) }
        try cache?.prepare()

        var conditional: [(name: String, value: String)] = []
        let cached = cache?.lookup(url)
        if let cached {
            switch cached.metadata.policy.lookup(request: requestControl, now: Date()) {
            case .fresh:
                logger.debug("cache hit", metadata: ["fetch.url": "\(url)"])
                var touched = cached.metadata
                touched.lastAccess = Date()
                // Bookkeeping only: a read-only cache still serves its fresh entries.
                try? cache?.update(touched)
                return cached.body
            case .revalidate(let validators):
                conditional = validators.map { ($0.name, $0.value) }
            }
        }

        let requestTime = Date()
        let response: HTTPClientResponse
        let body: Data
        do {
            response = try await send(target, headers: headers, conditional: conditional)
            body = try await Self.collect(response, url: url, limit: settings.maxEntryBytes)
        } catch {
            throw ErrorClassifier.classify(error, url: url, timeouts: configuration.timeouts)
        }
        let responseTime = Date()
        let status = Int(response.status.code)
        let fields = CachePolicy.relevantHeaders(response.headers.map { (name: $0.name, value: $0.value) })

        if status == 304 {
            guard let cache, let cached else {
                throw SwoopError(
                    .invalidResponse, "HTTP 304 Not Modified from \(url), but there is no cached copy to return", status: status
                )
            }
            var refreshed = cached.metadata
            refreshed.headers = CachePolicy.merge(stored: refreshed.headers, notModified: fields)
            refreshed.requestTime = requestTime
            refreshed.responseTime = responseTime
            refreshed.lastAccess = responseTime
            if CachePolicy.isStorable(status: 200, response: refreshed.headers, request: requestControl) {
                try cache.update(refreshed)
            } else {
                cache.remove(url)
            }
            logger.debug("cache revalidated", metadata: ["fetch.url": "\(url)"])
            return cached.body
        }
        guard (200..<300).contains(status) else {
            throw SwoopError.httpStatus(status, url: url)
        }
        if let cache {
            if CachePolicy.isStorable(status: status, response: fields, request: requestControl), body.count <= settings.maxBytes {
                try cache.store(
                    url: url, status: status, headers: fields, body: body, requestTime: requestTime, responseTime: responseTime
                )
            } else if cached != nil {
                // The stored bytes are no longer the current representation.
                cache.remove(url)
            }
        }
        return body
    }

    /// Sends a GET with the configured headers, the caller's and the validators.
    private nonisolated func send(
        _ url: URL, headers extra: [(name: String, value: String)], conditional: [(name: String, value: String)]
    ) async throws -> HTTPClientResponse {
        try await client.swoopGet(url, headers: configuration.headers + extra + conditional, configuration: configuration, logger: logger)
    }

    /// Reads the body of a 2xx response into memory, refusing more than `limit` bytes; the body of any
    /// other response is drained (up to 64 KiB) and dropped.
    private static func collect(_ response: HTTPClientResponse, url: String, limit: Int) async throws -> Data {
        guard (200..<300).contains(Int(response.status.code)) else {
            await response.body.drain()
            return Data()
        }
        let announced = response.headers.first(name: "Content-Length").flatMap { Int($0) }
        if let announced, announced > limit {
            throw tooLarge(url: url, limit: limit, size: announced)
        }
        var body = Data()
        body.reserveCapacity(announced ?? 0)
        for try await chunk in response.body {
            guard body.count + chunk.readableBytes <= limit else {
                // Leaving the loop drops the body stream, which cancels the request.
                throw tooLarge(url: url, limit: limit, size: nil)
            }
            body.append(contentsOf: chunk.readableBytesView)
        }
        return body
    }

    private static func tooLarge(url: String, limit: Int, size: Int?) -> SwoopError {
        let actual = size.map { " (\(ByteFormatting.format($0)))" } ?? ""
        return SwoopError(
            .invalidArgument,
            "\(url) is larger than the \(ByteFormatting.format(limit)) limit for fetching into memory\(actual); download it to a file instead"
        )
    }

    private static func joined(_ headers: [(name: String, value: String)], named name: String) -> String? {
        let values = headers.filter { $0.name.lowercased() == name }.map(\.value)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }
}
