import Foundation
import Testing

@testable import SwoopKit

@Suite("ContentRange")
struct ContentRangeTests {
    static let valid: [(String, Int, Int, Int?)] = [
        ("bytes 0-499/1234", 0, 499, 1234),
        ("bytes 500-1233/1234", 500, 1233, 1234),
        ("bytes 0-0/1", 0, 0, 1),
        ("bytes 1233-1233/1234", 1233, 1233, 1234),
        ("bytes 0-499/*", 0, 499, nil),
        ("bytes 42-42/*", 42, 42, nil),
        ("BYTES 0-499/1234", 0, 499, 1234),
        ("Bytes 0-499/1234", 0, 499, 1234),
        ("  bytes 0-499/1234  ", 0, 499, 1234),
        ("\tbytes\t0-499/1234\t", 0, 499, 1234),
        ("bytes   0-499/1234", 0, 499, 1234),
        ("bytes=0-499/1234", 0, 499, 1234),  // Seen in the wild.
        ("bytes 007-010/0100", 7, 10, 100),
        ("bytes 0-9223372036854775805/9223372036854775806", 0, 9_223_372_036_854_775_805, 9_223_372_036_854_775_806),
        ("bytes 0-9223372036854775806/9223372036854775807", 0, 9_223_372_036_854_775_806, Int.max),
        ("bytes 0-9223372036854775806/*", 0, 9_223_372_036_854_775_806, nil),
    ]

    @Test(arguments: valid)
    func parses(_ header: String, _ start: Int, _ end: Int, _ total: Int?) throws {
        let range = try #require(ContentRange(parsing: header))
        #expect(range.start == start)
        #expect(range.end == end)
        #expect(range.total == total)
        #expect(range.length == end - start + 1)
    }

    static let invalid: [String] = [
        "",
        "bytes",
        "bytes ",
        "bytes 0-499",
        "bytes 0-499/",
        "bytes -499/1234",
        "bytes 0-/1234",
        "bytes -/1234",
        "bytes 500-499/1234",  // end < start
        "bytes 0-1234/1234",  // end == total
        "bytes 0-2000/1234",  // end beyond total
        "bytes 1234-1234/1234",  // start at total
        "bytes 0-0/0",
        "bytes -1-499/1234",
        "bytes 0--1/1234",
        "bytes 0-499/-1234",
        "bytes +0-499/1234",
        "bytes 0-+499/1234",
        "bytes 0x0-0x1f/100",
        "bytes 0-499/12a4",
        "bytes 0-4 99/1234",
        "bytes 0 -499/1234",
        "bytes 0-499 /1234",
        "bytes 0-499/ 1234",
        "bytes 0.5-499/1234",
        "bytes 0-499/1234/5",
        "bytes 0-499/**",
        "bytes */1234",
        "bytes */*",
        "bytes0-499/1234",
        "bits 0-499/1234",
        "items 0-499/1234",
        "byte 0-499/1234",
        "0-499/1234",
        "bytes ０-499/1234",
        "bytes 0-499/1234 extra",
        "bytes 0-99999999999999999999/*",  // overflow
        "bytes 0-499/99999999999999999999",  // overflow
        "bytes 99999999999999999999-99999999999999999999/*",
        "bytes 0-9223372036854775807/*",  // length would overflow
        "bytes 0-9223372036854775808/*",
        "bytes 0,499/1234",
        "bytes 0-499,600-700/1234",
    ]

    @Test(arguments: invalid)
    func rejects(_ header: String) {
        #expect(ContentRange(parsing: header) == nil)
    }

    static let unsatisfied: [(String, Int?)] = [
        ("bytes */1234", 1234),
        ("bytes */0", 0),
        ("BYTES */1", 1),
        (" bytes  */1234 ", 1234),
        ("bytes=*/1234", 1234),
        ("bytes */9223372036854775807", Int.max),
        ("bytes */9223372036854775808", nil),
        ("bytes */*", nil),
        ("bytes */", nil),
        ("bytes */-1", nil),
        ("bytes * /1234", nil),
        ("bytes */ 1234", nil),
        ("bytes */12x", nil),
        ("bytes 0-499/1234", nil),
        ("bytes *1234", nil),
        ("*/1234", nil),
        ("", nil),
    ]

    @Test(arguments: unsatisfied)
    func parsesUnsatisfiedRange(_ header: String, _ total: Int?) {
        #expect(UnsatisfiedRange(parsing: header)?.total == total)
    }

    static let requestHeaders: [(Int, String)] = [
        (0, "bytes=0-"),
        (1, "bytes=1-"),
        (1024, "bytes=1024-"),
        (Int.max, "bytes=9223372036854775807-"),
        (-5, "bytes=0-"),
    ]

    @Test(arguments: requestHeaders)
    func requestHeader(_ offset: Int, _ expected: String) {
        #expect(ContentRange.requestHeader(from: offset) == expected)
    }

    static let decimals: [(String, Int?)] = [
        ("0", 0),
        ("000", 0),
        ("42", 42),
        ("9223372036854775807", Int.max),
        ("9223372036854775808", nil),
        ("18446744073709551616", nil),
        ("", nil),
        ("-1", nil),
        ("+1", nil),
        (" 1", nil),
        ("1 ", nil),
        ("1e3", nil),
        ("١", nil),  // Arabic-Indic digit one.
    ]

    @Test(arguments: decimals)
    func decimal(_ text: String, _ expected: Int?) {
        #expect(Syntax.decimal(text.utf8) == expected)
    }
}
