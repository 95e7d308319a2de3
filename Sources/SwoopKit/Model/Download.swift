import Foundation

/// A value snapshot of one download: what it is, where it goes and how far it got.
public struct Download: Sendable, Codable, Hashable, Identifiable {
    /// A stable identifier, kept in the store across restarts.
    public struct ID: Hashable, Sendable, Codable, CustomStringConvertible {
        /// The identifier's text: an aria2-style GID, 16 lower-case hex digits.
        public var rawValue: String
        /// Wraps an identifier's text.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// A new random identifier: a random non-zero 64-bit value as 16 lower-case hex digits,
        /// as aria2 makes its GIDs (its clients show and send them as they are).
        public static func make() -> ID {
            var generator = SystemRandomNumberGenerator()
            var value: UInt64 = 0
            while value == 0 { value = generator.next() }
            return ID(gid: value)
        }

        /// The identifier of a 64-bit value, as 16 lower-case hex digits.
        public init(gid value: UInt64) {
            let hex = String(value, radix: 16)
            self.rawValue = String(repeating: "0", count: 16 - hex.count) + hex
        }

        /// Whether `text` is a whole identifier: 16 hex digits, not all zero.
        public static func isGID(_ text: String) -> Bool {
            text.utf8.count == 16 && isHex(text) && UInt64(text, radix: 16) != 0
        }

        /// Whether every character of `text` is an ASCII hex digit.
        static func isHex(_ text: String) -> Bool {
            text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0 | 0x20) }
        }

        public var description: String { rawValue }

        /// Decodes from a plain string.
        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }

        /// Encodes as a plain string.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
    }

    /// Where a download is in its life. See `docs/ARCHITECTURE.md` for the transitions.
    public enum State: String, Sendable, Codable, Hashable, CaseIterable {
        /// Known but not transferring (queued, or never started).
        case waiting
        /// Transferring now.
        case active
        /// Paused by the user (``DownloadManager/pause(_:)``, `swoop pause`); resumable from its saved
        /// progress, but only when asked for by name: a bare `swoop resume` leaves it.
        case paused
        /// Stopped because its process stopped (Ctrl-C, SIGTERM, ``DownloadManager/shutdown()``, a
        /// cancelled task); a bare `swoop resume` or a rerun continues it from its saved progress.
        case interrupted
        /// The final file exists and is complete.
        case completed
        /// Stopped by an error; resumable from its saved progress.
        case failed
        /// Removed by the user.
        case removed
    }

    public var id: ID
    /// The URL as the user gave it.
    public var url: String
    /// The final path, once the file name is known (after the first response).
    public var destination: String?
    /// Where an unfinished download's bytes are kept (``destination`` with `.swoop`), once named.
    public var partPath: String? { state == .completed ? nil : destination.map { $0 + FileNaming.partSuffix } }
    public var state: State
    /// The full length of the file, or `nil` while it is unknown.
    public var totalBytes: Int?
    /// Bytes of the file that are in the part file (or the whole file, once completed).
    public var completedBytes: Int
    /// The current transfer speed, averaged over the last few seconds; 0 when not active.
    public var bytesPerSecond: Double
    /// The last error's message, for failed downloads (or what happened to a completed file).
    public var error: String?
    /// Higher runs first when waiting.
    public var priority: Int
    /// Connections transferring now (more than one for a download split into segments).
    public var connections: Int
    /// Set while the download waits to retry after a failed attempt: which retry and why.
    public var retry: Retry?

    /// A retry a download is waiting for.
    public struct Retry: Sendable, Codable, Hashable {
        /// The retry's number in a row (1-based).
        public var attempt: Int
        /// The most retries in a row.
        public var maxRetries: Int
        /// Why the last attempt failed.
        public var reason: String

        /// Creates a retry.
        public init(attempt: Int, maxRetries: Int, reason: String) {
            self.attempt = attempt
            self.maxRetries = maxRetries
            self.reason = reason
        }
    }

    /// The fraction done in 0...1, or `nil` when the length is unknown.
    public var fractionCompleted: Double? {
        guard let total = totalBytes, total > 0 else { return totalBytes == 0 ? 1 : nil }
        return min(1, Double(completedBytes) / Double(total))
    }

    /// Creates a snapshot.
    public init(
        id: ID, url: String, destination: String?, state: State, totalBytes: Int?, completedBytes: Int,
        bytesPerSecond: Double = 0, error: String? = nil, priority: Int = 0, connections: Int = 0
    ) {
        self.id = id
        self.url = url
        self.destination = destination
        self.state = state
        self.totalBytes = totalBytes
        self.completedBytes = completedBytes
        self.bytesPerSecond = bytesPerSecond
        self.error = error
        self.priority = priority
        self.connections = connections
    }
}

/// Something that happened to a download. Every event carries a full snapshot.
public enum DownloadEvent: Sendable {
    /// The download is known to the manager.
    case added(Download)
    /// A transfer began (or began again), from `completedBytes`.
    case started(Download)
    /// More bytes arrived. May be coalesced.
    case progress(Download)
    /// Something the user should know that is not an error: a restart from zero and why, a retry.
    case notice(Download, String)
    /// The download stopped without an error; its progress is saved. The snapshot's state says
    /// why: ``Download/State/paused`` at the caller's request, ``Download/State/interrupted`` when
    /// its process or task stopped.
    case paused(Download)
    /// The final file is in place.
    case completed(Download)
    /// The file was already complete from an earlier run; nothing was transferred.
    case alreadyComplete(Download)
    /// The download stopped with an error; its progress is saved. (Boxed: the error is large, and
    /// every buffered event would otherwise take its size.)
    indirect case failed(Download, SwoopError)
    /// The download was cancelled or removed.
    case removed(Download)

    /// The snapshot this event carries.
    public var download: Download {
        switch self {
        case .added(let d), .started(let d), .progress(let d), .notice(let d, _), .paused(let d),
            .completed(let d), .alreadyComplete(let d), .failed(let d, _), .removed(let d):
            return d
        }
    }

    /// Whether this event ends the download's run: it will not change again unless asked to.
    public var isTerminal: Bool {
        switch self {
        case .paused, .completed, .alreadyComplete, .failed, .removed: return true
        case .added, .started, .progress, .notice: return false
        }
    }
}
