import NIOConcurrencyHelpers

/// A ``TokenBucket`` that tasks share: each caller is charged for the bytes it read and sleeps
/// until they are paid for. Concurrent callers (the connections of one download, or all downloads
/// under the overall limit) queue in the order they were charged.
final class RateLimiter: Sendable {
    /// How often a waiter looks at the bucket again, so that a changed rate takes effect within
    /// this time even for a wait that was long at the old rate (a 256 KiB read at 1 KiB/s).
    static let recheckInterval: Duration = .milliseconds(100)

    private let bucket: NIOLockedValueBox<TokenBucket>

    /// A limiter at `bytesPerSecond` (`nil`: no limit).
    init(bytesPerSecond: Int?) {
        bucket = NIOLockedValueBox(TokenBucket(rate: bytesPerSecond, now: .now))
    }

    /// The current rate in bytes per second, or `nil` for no limit.
    var bytesPerSecond: Int? {
        bucket.withLockedValue { $0.rate }
    }

    /// Changes the rate from now on; callers already waiting see it within ``recheckInterval``.
    func setRate(_ bytesPerSecond: Int?) {
        bucket.withLockedValue { $0.setRate(bytesPerSecond, now: .now) }
    }

    /// Charges `bytes` and returns when they are allowed.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while waiting (the bytes stay
    ///   charged: they were read).
    func consume(_ bytes: Int) async throws {
        let ticket = bucket.withLockedValue { $0.reserve(bytes, now: .now) }
        while true {
            let wait = bucket.withLockedValue { $0.delay(until: ticket, now: .now) }
            if wait <= .zero { return }
            try await Task.sleep(for: min(wait, Self.recheckInterval))
        }
    }
}

/// The limiters one download's bytes pass through, in order: its own, then the manager's overall
/// one. Each must allow the bytes.
struct Throttle: Sendable {
    /// The limiters, each consulted in turn.
    var limiters: [RateLimiter]

    /// No limit at all.
    static let none = Throttle(limiters: [])

    /// Whether a limit holds the download under ``HTTPClientPool/slowRate`` now (an overall limit
    /// counts whole: the download's share of it is smaller still).
    var isSlow: Bool {
        limiters.contains { ($0.bytesPerSecond ?? .max) < HTTPClientPool.slowRate }
    }

    /// Returns when every limiter has allowed `bytes`.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while waiting.
    func consume(_ bytes: Int) async throws {
        // One after the other, not all at once: a download held back by its own limit is charged
        // to the overall limit only when its bytes may flow, so it takes no share it cannot use.
        for limiter in limiters {
            try await limiter.consume(bytes)
        }
    }
}
