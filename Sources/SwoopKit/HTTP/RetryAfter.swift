import Foundation

/// Reads the `Retry-After` header of a `503` or `429` response (RFC 9110 §10.2.3).
public enum RetryAfter: Sendable {
    /// How long the server asks the client to wait.
    ///
    /// Delay-seconds larger than `Int64.max` saturate rather than fail: a huge number is
    /// still a clear request to wait a long time. Capping the delay is the caller's job.
    ///
    /// - Parameters:
    ///   - header: The header value: delay-seconds (`120`) or an HTTP date.
    ///   - now: The current time, which an HTTP date is measured from; also the reference
    ///     for two-digit RFC 850 years.
    /// - Returns: The delay; `.zero` for a date in the past; `nil` for anything else,
    ///   including negative or fractional seconds.
    public static func delay(from header: String, now: Date) -> Duration? {
        let value = Syntax.trimmingOWS(header)
        let bytes = value.utf8
        if !bytes.isEmpty, bytes.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            return .seconds(Syntax.decimal(bytes).map(Int64.init) ?? Int64.max)
        }
        guard let date = HTTPDate.parse(value, now: now) else { return nil }
        let interval = date.timeIntervalSince(now)
        return interval > 0 ? .seconds(interval) : .zero
    }
}
