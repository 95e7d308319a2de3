import Foundation
import Testing

@testable import SwoopKit

@Suite("ByteFormatting")
struct ByteFormattingTests {
    static let kib = 1024
    static let mib = 1024 * 1024
    static let gib = 1024 * 1024 * 1024

    static let sizes: [(Int, String)] = [
        (0, "0 B"),
        (1, "1 B"),
        (512, "512 B"),
        (999, "999 B"),
        (1023, "1023 B"),
        (1024, "1.00 KiB"),
        (1535, "1.50 KiB"),
        (1536, "1.50 KiB"),
        (2047, "2.00 KiB"),
        (10 * kib - 1, "10.0 KiB"),  // 9.999 rounds up into another digit.
        (10 * kib, "10.0 KiB"),
        (12_697, "12.4 KiB"),
        (102_348, "99.9 KiB"),
        (102_349, "100 KiB"),  // 99.95 rounds up into another digit.
        (100 * kib, "100 KiB"),
        (1000 * kib, "1000 KiB"),
        (1023 * kib, "1023 KiB"),
        (mib - 1, "1.00 MiB"),  // 1023.999 KiB rounds up into the next unit.
        (mib, "1.00 MiB"),
        (12 * mib, "12.0 MiB"),
        (12 * mib + 300 * kib, "12.3 MiB"),
        (500 * mib, "500 MiB"),
        (gib, "1.00 GiB"),
        (gib + gib / 2, "1.50 GiB"),
        (4_700_000_000, "4.38 GiB"),
        (1 << 40, "1.00 TiB"),
        (5 << 50, "5.00 PiB"),
        (1 << 60, "1.00 EiB"),
        (Int.max, "8.00 EiB"),
        (-1, "-1 B"),
        (-512, "-512 B"),
        (-1536, "-1.50 KiB"),
        (Int.min, "-8.00 EiB"),
    ]

    /// A result line's size: the exact count is added only where the short form rounds.
    @Test(arguments: [
        (0, "0 bytes", "0 bytes"), (1, "1 byte", "1 byte"), (12, "12 bytes", "12 bytes"), (1023, "1023 bytes", "1023 bytes"),
        (1024, "1.00 KiB, 1024 bytes", "1.00 KiB (1024 bytes)"), (123_456, "121 KiB, 123456 bytes", "121 KiB (123456 bytes)"),
    ])
    func sizeAndCount(bytes: Int, listed: String, parenthesized: String) {
        #expect(ByteFormatting.sizeAndCount(bytes) == listed)
        #expect(ByteFormatting.sizeAndCount(bytes, countInParentheses: true) == parenthesized)
    }

    @Test(arguments: sizes)
    func format(_ bytes: Int, _ expected: String) {
        #expect(ByteFormatting.format(bytes) == expected)
    }

    @Test func formatAlwaysShowsThreeOrFourDigits() {
        var bytes = 1024
        while bytes <= Int.max / 5 {
            for value in [bytes - 1, bytes, bytes + bytes / 7, bytes * 3] {
                let text = ByteFormatting.format(value)
                let number = text.prefix { $0 != " " }
                let digits = number.filter(\.isNumber)
                #expect((3...4).contains(digits.count), "\(value) → \(text)")
                #expect(number.first != "0" || value < 1024, "\(value) → \(text)")
            }
            bytes = bytes * 5 / 3
        }
    }

    static let rates: [(Double, String)] = [
        (0, "0 B/s"),
        (0.4, "0 B/s"),
        (512, "512 B/s"),
        (1023.4, "1023 B/s"),
        (1023.5, "1.00 KiB/s"),
        (1536, "1.50 KiB/s"),
        (12.3 * 1_048_576, "12.3 MiB/s"),
        (999.9 * 1_048_576, "1000 MiB/s"),
        (1e30, "8.00 EiB/s"),
        (-1, "--"),
        (-.infinity, "--"),
        (.infinity, "--"),
        (.nan, "--"),
    ]

    @Test(arguments: rates)
    func rate(_ bytesPerSecond: Double, _ expected: String) {
        #expect(ByteFormatting.rate(bytesPerSecond) == expected)
    }

    static let durations: [(Double, String)] = [
        (0, "0s"),
        (-0.0, "0s"),
        (0.4, "0s"),
        (1, "1s"),
        (42, "42s"),
        (59.4, "59s"),
        (59.5, "1m00s"),
        (60, "1m00s"),
        (185, "3m05s"),
        (600, "10m00s"),
        (3599, "59m59s"),
        (3599.5, "1h00m"),
        (3600, "1h00m"),
        (3720, "1h02m"),
        (3779, "1h02m"),
        (36_000, "10h00m"),
        (86_399, "23h59m"),
        (86_400, "1d00h"),
        (183_600, "2d03h"),
        (999 * 86_400, "999d00h"),
        (1000 * 86_400 - 1, "999d23h"),
        (1000 * 86_400, "--"),
        (1e300, "--"),
        (-1, "--"),
        (-0.1, "--"),
        (.infinity, "--"),
        (-.infinity, "--"),
        (.nan, "--"),
    ]

    @Test(arguments: durations)
    func duration(_ seconds: Double, _ expected: String) {
        #expect(ByteFormatting.duration(seconds) == expected)
    }

    static let parsedSizes: [(String, Int?)] = [
        ("0", 0),
        ("10", 10),
        ("10b", 10),
        ("10B", 10),
        ("10K", 10 * kib),
        ("10k", 10 * kib),
        ("10KB", 10 * kib),
        ("10kib", 10 * kib),
        ("10KiB", 10 * kib),
        ("10Ki", 10 * kib),
        ("1.5M", 3 * mib / 2),
        ("1.5 MiB", 3 * mib / 2),
        ("1MiB", mib),
        ("1mb", mib),
        (" 2G ", 2 * gib),
        ("\t2g\t", 2 * gib),
        ("2  GiB", 2 * gib),
        ("1T", 1 << 40),
        ("1P", 1 << 50),
        ("1E", 1 << 60),
        ("7E", 7 << 60),
        ("0.5K", 512),
        (".5K", 512),
        ("1.K", kib),
        ("1.", 1),
        ("1.5", 1),  // Whole bytes, rounded down.
        ("0.0001K", 0),
        ("1.0009765625K", kib + 1),  // Exact, not floating point.
        ("7.99999999999999999999E", Int.max - 1),
        ("9223372036854775807", Int.max),
        ("00010", 10),
        // Malformed or too large.
        ("9223372036854775808", nil),
        ("8E", nil),
        ("8388608T", nil),
        ("", nil),
        (" ", nil),
        ("K", nil),
        ("MiB", nil),
        (".", nil),
        (".K", nil),
        ("..5", nil),
        ("1.2.3", nil),
        ("-1", nil),
        ("-1K", nil),
        ("+1", nil),
        ("1KK", nil),
        ("1 K B", nil),
        ("1 0", nil),
        ("10X", nil),
        ("10bits", nil),
        ("1bb", nil),
        ("1ib", nil),
        ("1kbi", nil),
        ("1e3", nil),
        ("0x10", nil),
        ("1,5M", nil),
        ("10 KiB/s", nil),
        ("１０", nil),
    ]

    @Test(arguments: parsedSizes)
    func parseSize(_ text: String, _ expected: Int?) {
        #expect(ByteFormatting.parseSize(text) == expected)
    }

    @Test(arguments: [0, 1, 512, 1024, 1536, 12 * 1024 * 1024, 1 << 40])
    func parseSizeReadsExactFormattedValues(_ bytes: Int) {
        // Values that format exactly parse back to themselves.
        let text = ByteFormatting.format(bytes)
        #expect(ByteFormatting.parseSize(text) == bytes, "\(text)")
    }
}
