import Foundation
import Testing

@testable import SwoopKit

@Suite("RetryAfter")
struct RetryAfterTests {
    /// Sun, 06 Nov 1994 08:49:37 GMT.
    static let now = Date(timeIntervalSince1970: 784_111_777)

    static let delays: [(String, Duration?)] = [
        // delay-seconds
        ("0", .zero),
        ("1", .seconds(1)),
        ("120", .seconds(120)),
        ("  120  ", .seconds(120)),
        ("\t5\t", .seconds(5)),
        ("0007", .seconds(7)),
        ("86400", .seconds(86_400)),
        ("9223372036854775807", .seconds(Int64.max)),
        ("99999999999999999999999999", .seconds(Int64.max)),  // Saturates.
        // HTTP dates, measured from `now`.
        ("Sun, 06 Nov 1994 08:50:37 GMT", .seconds(60)),
        ("Sun, 06 Nov 1994 08:49:38 GMT", .seconds(1)),
        ("Mon, 07 Nov 1994 08:49:37 GMT", .seconds(86_400)),
        ("Sunday, 06-Nov-94 09:49:37 GMT", .seconds(3600)),
        ("Sun Nov  6 08:49:47 1994", .seconds(10)),
        ("  Sun, 06 Nov 1994 08:50:37 GMT  ", .seconds(60)),
        // Dates now or in the past mean "retry now".
        ("Sun, 06 Nov 1994 08:49:37 GMT", .zero),
        ("Sun, 06 Nov 1994 08:49:36 GMT", .zero),
        ("Thu, 01 Jan 1970 00:00:00 GMT", .zero),
        // Garbage.
        ("", nil),
        ("   ", nil),
        ("-1", nil),
        ("+5", nil),
        ("1.5", nil),
        ("5s", nil),
        ("1e3", nil),
        ("12 34", nil),
        ("0x10", nil),
        ("٣", nil),
        ("soon", nil),
        ("Sun, 06 Nov 1994 08:50:37", nil),
        ("Sun, 31 Feb 1994 08:50:37 GMT", nil),
        ("120, 240", nil),
    ]

    @Test(arguments: delays)
    func delay(_ header: String, _ expected: Duration?) {
        #expect(RetryAfter.delay(from: header, now: Self.now) == expected)
    }

    @Test func fractionalNowGivesFractionalDelay() throws {
        let now = Self.now.addingTimeInterval(0.25)
        let delay = try #require(RetryAfter.delay(from: "Sun, 06 Nov 1994 08:49:47 GMT", now: now))
        #expect(delay == .milliseconds(9750))
    }

    @Test func twoDigitYearsAreReadRelativeToNow() throws {
        // "01-Jan-30" is 2030 when now is 2026, not 1930 (which would be "retry now").
        let now = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01
        let delay = try #require(RetryAfter.delay(from: "Tuesday, 01-Jan-30 00:00:00 GMT", now: now))
        #expect(delay == .seconds(1_893_456_000 - 1_767_225_600))
    }
}
