import Foundation
import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Turns what the HTTP stack throws into a ``SwoopError`` with a clear message and the right
/// retry class. Unknown transport errors are retryable: a fresh attempt resumes from the saved offset.
enum ErrorClassifier {
    /// Whether an error is the source's (it cannot be reached, refuses, or answers with an error
    /// status), so another source of the same file may do better; a local one (the disk) is not.
    static func isSourceFailure(_ error: SwoopError) -> Bool {
        [.network, .timeout, .tls, .httpStatus, .redirect].contains(error.code)
    }

    /// Whether `error` is a refused connection or a host that could not be resolved (not a timeout,
    /// not a connection that broke once open): worth few retries.
    static func isUnreachable(_ error: SwoopError) -> Bool {
        switch error.cause {
        case let cause as IOError:
            return cause.errnoCode == ECONNREFUSED
        case let cause as NIOConnectionError:
            return cause.connectionErrors.allSatisfy { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }
        default:
            return false
        }
    }

    static func classify(_ error: any Error, url: String, timeouts: Configuration.Timeouts) -> SwoopError {
        switch error {
        case let error as SwoopError:
            return error
        case is CancellationError:
            return SwoopError(.cancelled, "download of \(url) interrupted", cause: error)
        case let error as HTTPClientError:
            return classify(httpClient: error, url: url, timeouts: timeouts)
        case let error as NIOSSLError:
            return SwoopError(.tls, "TLS error with \(url): \(tlsMessage(error))", cause: error)
        case let error as BoringSSLError:
            return SwoopError(.tls, "TLS error with \(url): \(tlsMessage(error))", cause: error)
        case let error as NIOSSLExtraError:
            return SwoopError(.tls, "TLS error with \(url): \(error)", cause: error)
        case let error as StatusLineGuard.InvalidStatus:
            return SwoopError(
                .invalidResponse, "invalid HTTP response from \(url): status \(error.code) (a status is from 100 to 999)", cause: error
            )
        case let error as HTTPParserError where error == .invalidEOFState:
            return SwoopError(.network, "connection to \(url) closed in the middle of the response", cause: error, isRetryable: true)
        case let error as HTTPParserError:
            return SwoopError(.invalidResponse, "invalid HTTP response from \(url): \(error)", cause: error)
        case let error as IOError:
            let what = error.errnoCode == ECONNREFUSED ? "cannot connect to" : "network error with"
            return SwoopError(.network, "\(what) \(url): \(String(cString: strerror(error.errnoCode)))", cause: error, isRetryable: true)
        case let error as ChannelError:
            return SwoopError(.network, "connection error with \(url): \(error)", cause: error, isRetryable: true)
        case let error as NIOConnectionError where error.connectionErrors.isEmpty:
            return SwoopError(.network, "cannot resolve host \(error.host) for \(url)", cause: error, isRetryable: true)
        case let error as NIOConnectionError:
            let refused = error.connectionErrors.allSatisfy { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }
            let reason = refused ? "connection refused" : error.connectionErrors.map { "\($0.error)" }.joined(separator: "; ")
            return SwoopError(.network, "cannot connect to \(url): \(reason)", cause: error, isRetryable: true)
        default:
            let text = String(describing: error)
            return SwoopError(.network, "error with \(url): \(text)", cause: error, isRetryable: true)
        }
    }

    private static func classify(httpClient error: HTTPClientError, url: String, timeouts: Configuration.Timeouts) -> SwoopError {
        switch error {
        case .connectTimeout, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout:
            return SwoopError(.timeout, "cannot connect to \(url) within \(ByteFormatting.duration(timeouts.connect.seconds))", cause: error, isRetryable: true)
        case .readTimeout:
            return SwoopError(.timeout, "no data from \(url) for \(ByteFormatting.duration(timeouts.idle.seconds))", cause: error, isRetryable: true)
        case .deadlineExceeded:
            return SwoopError(.timeout, "no response from \(url) in time", cause: error, isRetryable: true)
        case .remoteConnectionClosed, .bodyLengthMismatch:
            return SwoopError(.network, "connection to \(url) closed early", cause: error, isRetryable: true)
        case .cancelled:
            return SwoopError(.cancelled, "download of \(url) interrupted", cause: error)
        case .invalidURL, .emptyHost, .emptyScheme:
            return SwoopError(.invalidURL, "invalid URL: \(url)", cause: error)
        default:
            return SwoopError(.network, "HTTP error with \(url): \(error)", cause: error, isRetryable: true)
        }
    }

    /// A failed certificate check in plain words (it comes wrapped, as `handshakeFailed(…)`, from
    /// NIOSSL); anything else as the TLS stack words it.
    private static func tlsMessage(_ error: any Error) -> String {
        let text = String(describing: error)
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return "certificate verification failed"
        }
        // What BoringSSL says when the first bytes back are not a TLS record: plain HTTP, mostly.
        if text.contains("WRONG_VERSION_NUMBER") {
            return "the server did not answer in TLS (an http:// address?)"
        }
        return text
    }
}
