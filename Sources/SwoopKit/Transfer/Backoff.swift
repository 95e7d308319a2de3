/// Pure retry timing: exponential backoff with jitter, honouring `Retry-After` up to a cap.
struct Backoff: Sendable {
    var policy: Configuration.Retry

    /// The delay before retry number `retry` (1-based).
    ///
    /// - Parameters:
    ///   - retryAfter: The server's `Retry-After`, if it sent one.
    ///   - jitter: A number in 0..<1 (random in production, fixed in tests).
    func delay(beforeRetry retry: Int, retryAfter: Duration?, jitter: Double) -> Duration {
        let exponent = min(max(retry - 1, 0), 30)
        let raw = policy.baseDelay * (1 << exponent)
        let capped = min(raw, policy.maxDelay)
        // "Equal jitter": at least half the backoff, so retries never bunch up at zero.
        let backoff = capped / 2 + (capped / 2) * min(max(jitter, 0), 1)
        guard let retryAfter else { return backoff }
        return max(backoff, min(retryAfter, policy.maxRetryAfter))
    }
}
