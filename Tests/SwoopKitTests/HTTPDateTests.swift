import Foundation
import Testing

@testable import SwoopKit

@Suite("HTTPDate")
struct HTTPDateTests {
    /// 1994-11-06T08:49:37Z, the RFC's example.
    static let example: TimeInterval = 784_111_777

    /// 2026-03-01T00:00:00Z, the reference for two-digit years.
    static let now = Date(timeIntervalSince1970: 1_772_323_200)

    static let parsed: [(String, TimeInterval)] = [
        // IMF-fixdate.
        ("Sun, 06 Nov 1994 08:49:37 GMT", example),
        ("sun, 06 nov 1994 08:49:37 gmt", example),
        ("SUN, 06 NOV 1994 08:49:37 UTC", example),
        ("Sun, 6 Nov 1994 08:49:37 GMT", example),
        ("  Sun,  06  Nov 1994\t08:49:37 GMT  ", example),
        ("Sunday, 06 Nov 1994 08:49:37 GMT", example),
        ("Mon, 06 Nov 1994 08:49:37 GMT", example),  // The weekday is not cross-checked.
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
        ("Wed, 31 Dec 1969 23:59:59 GMT", -1),
        ("Tue, 19 Jan 2038 03:14:08 GMT", 2_147_483_648),
        ("Tue, 29 Feb 2000 12:00:00 GMT", 951_825_600),
        ("Thu, 29 Feb 2024 00:00:00 GMT", 1_709_164_800),
        ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799),
        ("Mon, 01 Jan 0001 00:00:00 GMT", -62_135_596_800),
        ("Sat, 31 Dec 2016 23:59:60 GMT", 1_483_228_800),  // Leap second.
        // RFC 850.
        ("Sunday, 06-Nov-94 08:49:37 GMT", example),
        ("sunday, 06-nov-94 08:49:37 GMT", example),
        ("Sun, 06-Nov-94 08:49:37 GMT", example),
        ("Sunday, 06-Nov-1994 08:49:37 GMT", example),
        ("Thursday, 01-Jan-70 00:00:00 GMT", 3_155_760_000),  // 2070: only 44 years ahead of 2026.
        ("Thursday, 01-Jan-26 00:00:00 GMT", 1_767_225_600),
        // Two-digit years up to 50 years ahead of 2026 are this century, later ones the last.
        ("Thursday, 01-Jan-76 00:00:00 GMT", 3_345_062_400),
        ("Thursday, 01-Jan-77 00:00:00 GMT", 220_924_800),
        // asctime.
        ("Sun Nov  6 08:49:37 1994", example),
        ("Sun Nov 6 08:49:37 1994", example),
        ("Sun Nov 06 08:49:37 1994", example),
        ("sun nov  6 08:49:37 1994", example),
        ("Thu Jan  1 00:00:00 1970", 0),
    ]

    @Test(arguments: parsed)
    func parses(_ text: String, _ expected: TimeInterval) {
        #expect(HTTPDate.parse(text, now: Self.now)?.timeIntervalSince1970 == expected)
    }

    @Test func publicParseUsesTheCurrentTime() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT")?.timeIntervalSince1970 == Self.example)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT")?.timeIntervalSince1970 == Self.example)
    }

    static let rejected: [String] = [
        "",
        "   ",
        "garbage",
        "120",
        "Sun, 06 Nov 1994 08:49:37",
        "Sun, 06 Nov 1994 08:49:37 PST",
        "Sun, 06 Nov 1994 08:49:37 +0000",
        "Sun 06 Nov 1994 08:49:37 GMT",
        "Sun,06 Nov 1994 08:49:37 GMT",
        "Xyz, 06 Nov 1994 08:49:37 GMT",
        "06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 06 November 1994 08:49:37 GMT",
        "Sun, 006 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, 06 Nov 19945 08:49:37 GMT",
        "Sun, 06 Nov -994 08:49:37 GMT",
        "Sun, +6 Nov 1994 08:49:37 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT",
        "Sun, 31 Nov 1994 08:49:37 GMT",
        "Sun, 29 Feb 1900 08:49:37 GMT",
        "Sun, 29 Feb 2023 08:49:37 GMT",
        "Sun, 30 Feb 2024 08:49:37 GMT",
        "Sun, 32 Jan 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:61 GMT",
        "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, 06 Nov 1994 08:49 GMT",
        "Sun, 06 Nov 1994 08:49:37:00 GMT",
        "Sun, 06 Nov 1994 08-49-37 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT extra",
        "Sun, 06 Nov 1994 ０8:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37",
        "Sunday, 06-Nov-94 08:49:37 EST",
        "Sunday, 06-Nov-994 08:49:37 GMT",
        "Sunday, 06-Nov 08:49:37 GMT",
        "Sunday, 06-Nov-94-1 08:49:37 GMT",
        "Sunday, 31-Apr-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 94",
        "Sun Nov  6 08:49:37 1994 GMT",
        "Sun Nov 31 08:49:37 1994",
        "Sun Foo  6 08:49:37 1994",
        "Nov  6 08:49:37 1994",
        "Sun Nov  6 1994 08:49:37",
    ]

    @Test(arguments: rejected)
    func rejects(_ text: String) {
        #expect(HTTPDate.parse(text, now: Self.now) == nil)
    }

    static let formatted: [(TimeInterval, String)] = [
        (example, "Sun, 06 Nov 1994 08:49:37 GMT"),
        (example + 0.999, "Sun, 06 Nov 1994 08:49:37 GMT"),
        (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
        (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
        (-0.5, "Wed, 31 Dec 1969 23:59:59 GMT"),
        (951_825_600, "Tue, 29 Feb 2000 12:00:00 GMT"),
        (2_147_483_648, "Tue, 19 Jan 2038 03:14:08 GMT"),
        (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
        (-62_135_596_800, "Mon, 01 Jan 0001 00:00:00 GMT"),
        // Beyond four-digit years: clamped.
        (1e15, "Fri, 31 Dec 9999 23:59:59 GMT"),
        (-1e15, "Mon, 01 Jan 0001 00:00:00 GMT"),
        (.infinity, "Fri, 31 Dec 9999 23:59:59 GMT"),
        (-.infinity, "Mon, 01 Jan 0001 00:00:00 GMT"),
        (.nan, "Thu, 01 Jan 1970 00:00:00 GMT"),
    ]

    @Test(arguments: formatted)
    func formats(_ interval: TimeInterval, _ expected: String) {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: interval)) == expected)
    }

    @Test func formatMatchesFoundationsCalendarAndRoundTrips() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        // Deterministic pseudo-random instants between 1583 (after the Julian switch, where
        // Foundation's Gregorian calendar and the proleptic one agree) and 9999.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let low = -12_212_553_600.0
        let high = 253_402_300_799.0
        for _ in 0..<2000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let interval = (low + Double(state >> 11) / Double(1 << 53) * (high - low)).rounded(.down)
            let date = Date(timeIntervalSince1970: interval)
            let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
            let expected = String(
                format: "%@, %02d %@ %04d %02d:%02d:%02d GMT",
                weekdays[c.weekday! - 1],
                c.day!,
                months[c.month! - 1],
                c.year!,
                c.hour!,
                c.minute!,
                c.second!
            )
            let text = HTTPDate.format(date)
            #expect(text == expected)
            #expect(HTTPDate.parse(text, now: Self.now) == date)
        }
    }

    @Test func calendarArithmeticRoundTripsEveryDayForCenturies() {
        var expected = HTTPDate.days(fromYear: 1600, month: 1, day: 1)
        for year in 1600...2400 {
            for month in 1...12 {
                for day in 1...HTTPDate.daysInMonth(year: year, month: month) {
                    let days = HTTPDate.days(fromYear: year, month: month, day: day)
                    #expect(days == expected)
                    let civil = HTTPDate.civil(fromDays: days)
                    #expect(civil.year == year && civil.month == month && civil.day == day)
                    expected += 1
                }
            }
        }
    }

    static let leapYearTable: [(Int, Bool)] = [
        (1600, true), (1700, false), (1800, false), (1900, false), (2000, true), (2023, false), (2024, true),
        (2100, false), (2400, true), (4, true), (1, false),
    ]

    @Test(arguments: leapYearTable)
    func leapYears(_ year: Int, _ isLeap: Bool) {
        #expect(HTTPDate.isLeapYear(year) == isLeap)
        #expect(HTTPDate.daysInMonth(year: year, month: 2) == (isLeap ? 29 : 28))
    }

    static let twoDigitYearTable: [(Int, Int, Int)] = [
        // (current year, two-digit year, expanded year)
        (2026, 26, 2026),
        (2026, 76, 2076),
        (2026, 77, 1977),
        (2026, 0, 2000),
        (2026, 99, 1999),
        (1994, 94, 1994),
        (1994, 44, 2044),
        (1994, 45, 1945),
        (2099, 0, 2100),
        (2099, 49, 2149),
        (2099, 50, 2050),
        (2000, 50, 2050),
        (2000, 51, 1951),
    ]

    @Test(arguments: twoDigitYearTable)
    func twoDigitYears(_ currentYear: Int, _ twoDigit: Int, _ expected: Int) {
        let now = Date(timeIntervalSince1970: Double(HTTPDate.days(fromYear: currentYear, month: 7, day: 1) * 86_400))
        #expect(HTTPDate.expandTwoDigitYear(twoDigit, now: now) == expected)
    }
}
