import Foundation
import NIOHTTP1

/// Carries a server's `Retry-After` inside a ``SwoopError``'s cause.
struct RetryAfterHint: Error, Sendable {
    var delay: Duration
}

extension SwoopError {
    /// An error status from a server, naming the status and the URL. 408, 429 and 5xx are worth
    /// retrying; a `Retry-After` header, when it can be read, rides along as the cause.
    ///
    /// - Parameters:
    ///   - status: The response's status code.
    ///   - url: The URL that was asked for.
    ///   - retryAfter: The response's `Retry-After` header, if any.
    static func httpStatus(_ status: Int, url: String, retryAfter: String? = nil) -> SwoopError {
        let reason = HTTPResponseStatus(statusCode: status).reasonPhrase
        let hint = retryAfter.flatMap { RetryAfter.delay(from: $0, now: Date()) }
        return SwoopError(
            .httpStatus, "HTTP \(status) \(reason) from \(url)", status: status, cause: hint.map { RetryAfterHint(delay: $0) },
            isRetryable: status == 408 || status == 429 || status >= 500
        )
    }

    /// The server's `Retry-After` delay, when this error carries one.
    var retryAfter: Duration? { (cause as? RetryAfterHint)?.delay }
}
