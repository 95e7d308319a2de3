/// The retry rule of a download's attempts, one for a single connection and for each connection of
/// a download split into segments. Pure: it counts failures in a row and says whether to go again
/// and after how long; the caller sleeps and sends.
struct Retries: Sendable {
    /// What to do after a failed attempt.
    enum Decision: Sendable, Hashable {
        /// Try again after `delay`; `attempt` counts the retries in a row (1-based) of at most
        /// `of` (fewer for an unreachable server than the policy's).
        case retry(after: Duration, attempt: Int, of: Int)
        /// Stop: the error is not worth retrying, or the retries in a row are used up.
        case giveUp
    }

    let backoff: Backoff
    /// Failed attempts in a row (an attempt that got further than any before resets the count).
    private(set) var failures = 0

    /// Retries in a row of a connection that was refused or a host that could not be resolved: a
    /// server that is not there now is rarely there a second later, so these give up early (curl
    /// fails at once; wget does not retry a refused connection).
    static let maxUnreachableRetries = 2

    init(policy: Configuration.Retry) {
        backoff = Backoff(policy: policy)
    }

    /// The most retries in a row.
    var maxRetries: Int { backoff.policy.maxRetries }

    /// An attempt succeeded: the next failure is the first in a row again.
    mutating func reset() { failures = 0 }

    /// Decides after an attempt failed with `error`.
    ///
    /// - Parameters:
    ///   - progressed: The attempt got further than any attempt before it (not merely wrote bytes:
    ///     a server without ranges that stalls at the same point each time makes none): the count
    ///     starts again, so a slow but flaky server still finishes.
    ///   - jitter: A number in 0..<1 (random in production, fixed in tests).
    ///
    /// A refused connection or a host that could not be resolved (``ErrorClassifier/isUnreachable(_:)``)
    /// gets at most ``maxUnreachableRetries``.
    mutating func decide(after error: SwoopError, progressed: Bool, jitter: Double) -> Decision {
        guard error.isRetryable else { return .giveUp }
        if progressed { failures = 0 }
        failures += 1
        let most = ErrorClassifier.isUnreachable(error) ? min(maxRetries, Self.maxUnreachableRetries) : maxRetries
        guard failures <= most else { return .giveUp }
        return .retry(after: backoff.delay(beforeRetry: failures, retryAfter: error.retryAfter, jitter: jitter), attempt: failures, of: most)
    }
}
