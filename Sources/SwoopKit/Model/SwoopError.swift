/// The one error type of SwoopKit: a stable ``Code``, a message that names the thing (URL, path,
/// status) and, where there is one, the underlying cause.
public struct SwoopError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. A struct over a private enum so that new codes are not breaking.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidURL, unsupportedScheme, invalidArgument
            case fileSystem, diskFull, destinationExists
            case network, timeout, tls
            case httpStatus, invalidResponse, redirect
            case checksumMismatch, inUse, cancelled, store, notFound, other
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The URL could not be parsed.
        public static let invalidURL = Code(.invalidURL)
        /// The URL's scheme is not http or https.
        public static let unsupportedScheme = Code(.unsupportedScheme)
        /// An option or argument is not valid.
        public static let invalidArgument = Code(.invalidArgument)
        /// A file or directory could not be read, written, created or renamed.
        public static let fileSystem = Code(.fileSystem)
        /// The disk (or quota) is full.
        public static let diskFull = Code(.diskFull)
        /// The destination exists and the collision policy forbids touching it.
        public static let destinationExists = Code(.destinationExists)
        /// The connection failed, was reset or closed early.
        public static let network = Code(.network)
        /// No bytes arrived (or no connection was made) within the configured time.
        public static let timeout = Code(.timeout)
        /// The TLS handshake or certificate verification failed.
        public static let tls = Code(.tls)
        /// The server answered with an error status.
        public static let httpStatus = Code(.httpStatus)
        /// The server's response broke the protocol or the resume contract.
        public static let invalidResponse = Code(.invalidResponse)
        /// A redirect was refused (loop, limit, downgrade, bad Location).
        public static let redirect = Code(.redirect)
        /// The downloaded bytes do not match the expected checksum.
        public static let checksumMismatch = Code(.checksumMismatch)
        /// Another process is working on the same download.
        public static let inUse = Code(.inUse)
        /// The download was stopped by the caller (Ctrl-C, cancellation); its state is saved.
        public static let cancelled = Code(.cancelled)
        /// The state store could not be read or written.
        public static let store = Code(.store)
        /// No download has the given id.
        public static let notFound = Code(.notFound)
        /// Anything else (an unexpected error from below).
        public static let other = Code(.other)

        public var description: String { base.rawValue }

        /// The code named by its ``description`` (as a store keeps it), or `nil` for an unknown name.
        public init?(name: String) {
            guard let base = Base(rawValue: name) else { return nil }
            self.base = base
        }
    }

    /// What kind of failure this is.
    public var code: Code
    /// One clear sentence for a person, naming the URL, path or status involved.
    public var message: String
    /// The HTTP status, for ``Code/httpStatus``.
    public var status: Int?
    /// The lower-level error, if any.
    public var cause: (any Error)?
    /// Whether trying again later (from the saved offset) may succeed.
    public var isRetryable: Bool

    /// Creates an error.
    public init(_ code: Code, _ message: String, status: Int? = nil, cause: (any Error)? = nil, isRetryable: Bool = false) {
        self.code = code
        self.message = message
        self.status = status
        self.cause = cause
        self.isRetryable = isRetryable
    }

    public var description: String { message }
}

extension SwoopError {
    package static func fileSystem(_ action: String, path: String, errno code: Int32) -> SwoopError {
        let reason = String(cString: strerror(code))
        if code == ENOSPC || code == EDQUOT {
            return SwoopError(.diskFull, "cannot \(action) \(path): \(reason)")
        }
        return SwoopError(.fileSystem, "cannot \(action) \(path): \(reason)")
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
