import NIOCore

extension TimeAmount {
    /// Converts, saturating at about 292 years instead of overflowing.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let (nanoseconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        self = overflow ? .nanoseconds(seconds < 0 ? 0 : .max) : .nanoseconds(nanoseconds &+ attoseconds / 1_000_000_000)
    }
}
