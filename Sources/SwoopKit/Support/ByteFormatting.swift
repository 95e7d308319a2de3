import Foundation

/// Human-readable sizes, rates and durations for progress output, and size parsing for options.
///
/// Units are binary (1 KiB = 1024 B). Output is locale-independent: always `.` as the
/// decimal separator, so logs and scripts see the same text everywhere.
public enum ByteFormatting: Sendable {
    private static let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]

    /// Formats a byte count with three significant digits.
    ///
    /// Byte counts under 1 KiB are exact (`"512 B"`); larger ones are scaled to the
    /// largest unit that keeps the value under 1024 and shown with three significant
    /// digits (`"1.50 KiB"`, `"12.0 MiB"`, `"100 GiB"`), or four integer digits between
    /// 1000 and 1023 of a unit (`"1000 KiB"`).
    ///
    /// - Parameter bytes: The byte count; negative counts get a leading `-`.
    /// - Returns: The formatted size.
    public static func format(_ bytes: Int) -> String {
        let text = scaled(Double(bytes.magnitude))
        return bytes < 0 ? "-" + text : text
    }

    /// A size as ``format(_:)`` shows it and its exact count, `"121 KiB, 123456 bytes"` (or
    /// `"121 KiB (123456 bytes)"` with `countInParentheses`); only the count where ``format(_:)`` is
    /// exact already (under 1 KiB): `"12 bytes"`, `"1 byte"`.
    public static func sizeAndCount(_ bytes: Int, countInParentheses: Bool = false) -> String {
        let count = bytes == 1 ? "1 byte" : "\(bytes) bytes"
        guard bytes.magnitude >= 1024 else { return count }
        return countInParentheses ? "\(format(bytes)) (\(count))" : "\(format(bytes)), \(count)"
    }

    /// Formats a transfer rate like ``format(_:)`` followed by `/s`, such as `"12.3 MiB/s"`.
    ///
    /// - Parameter bytesPerSecond: The rate; rates beyond 8 EiB/s are shown as 8 EiB/s.
    /// - Returns: The formatted rate, or `"--"` when the rate is negative or not finite.
    public static func rate(_ bytesPerSecond: Double) -> String {
        guard bytesPerSecond.isFinite, bytesPerSecond >= 0 else { return "--" }
        return scaled(min(bytesPerSecond, Double(Int64.max))) + "/s"
    }

    /// Formats a remaining time for an ETA column, rounded to the nearest second.
    ///
    /// Under a minute: `"42s"`; under an hour: `"3m05s"`; under a day: `"1h02m"`; then
    /// `"2d03h"` (the smaller unit is truncated, not rounded).
    ///
    /// - Parameter seconds: The remaining time in seconds.
    /// - Returns: The formatted duration, or `"--"` when `seconds` is negative, not finite
    ///   or 1000 days or more (an estimate that far out means "unknown").
    /// A short wait, such as a retry delay: tenths of a second under 10 s (`"0.5s"`, `"2.3s"`), else
    /// as ``duration(_:)``.
    public static func delay(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "--" }
        guard seconds < 9.95 else { return duration(seconds) }
        let tenths = Int((seconds * 10).rounded())
        return tenths % 10 == 0 ? "\(tenths / 10)s" : "\(tenths / 10).\(tenths % 10)s"
    }

    public static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1000 * 86_400 else { return "--" }
        let total = Int(seconds.rounded())
        switch total {
        case ..<60:
            return "\(total)s"
        case ..<3600:
            return "\(total / 60)m\(twoDigits(total % 60))s"
        case ..<86_400:
            return "\(total / 3600)h\(twoDigits(total / 60 % 60))m"
        default:
            return "\(total / 86_400)d\(twoDigits(total / 3600 % 24))h"
        }
    }

    /// Parses a size such as `"10"`, `"10K"`, `"1.5M"`, `"2G"` or `"1 MiB"`.
    ///
    /// Units are case-insensitive and binary whatever their spelling: `K`, `KB`, `Ki` and
    /// `KiB` all mean 1024, likewise `M`, `G`, `T`, `P` and `E`; `B` or no unit means bytes.
    /// Spaces and tabs around the value and spaces between number and unit are allowed. A fractional
    /// result is rounded down to whole bytes.
    ///
    /// - Parameter s: The text to parse.
    /// - Returns: The number of bytes, or `nil` if `s` is malformed, negative or overflows `Int`.
    public static func parseSize(_ s: String) -> Int? {
        let text = Array(Syntax.trimmingOWS(s.lowercased()).utf8)
        let numberEnd = text.firstIndex { !isDigit($0) && $0 != UInt8(ascii: ".") } ?? text.endIndex
        let unitStart = text[numberEnd...].firstIndex { $0 != UInt8(ascii: " ") } ?? text.endIndex
        guard let multiplier = multiplier(unit: text[unitStart...]) else { return nil }
        let number = text[..<numberEnd]
        let parts = number.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.contains(where: { !$0.isEmpty }) else { return nil }
        guard let whole = parts[0].isEmpty ? 0 : Syntax.decimal(parts[0]) else { return nil }
        let (scaledWhole, overflow) = whole.multipliedReportingOverflow(by: multiplier)
        guard !overflow else { return nil }
        let fraction = parts.count == 2 ? fractionBytes(parts[1], multiplier: multiplier) : 0
        let (sum, sumOverflow) = scaledWhole.addingReportingOverflow(fraction)
        return sumOverflow ? nil : sum
    }

    // MARK: - Helpers

    /// `magnitude` in the largest fitting unit with three significant digits.
    private static func scaled(_ magnitude: Double) -> String {
        var value = magnitude
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        // Rounding can carry into another digit (9.996 -> 10.0, 1023.7 -> 1024):
        // drop a decimal, or move up a unit, when it does.
        var decimals = unit == 0 ? 0 : value < 10 ? 2 : value < 100 ? 1 : 0
        while decimals > 0, rounded(value, decimals) >= pow10(3 - decimals) {
            decimals -= 1
        }
        if decimals == 0, rounded(value, 0) >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
            decimals = 2
        }
        return render(value, decimals: decimals) + " " + units[unit]
    }

    private static func rounded(_ value: Double, _ decimals: Int) -> Double {
        (value * pow10(decimals)).rounded() / pow10(decimals)
    }

    private static func pow10(_ exponent: Int) -> Double {
        (0..<exponent).reduce(1.0) { value, _ in value * 10 }
    }

    /// `value` with exactly `decimals` digits after the point, without locale.
    private static func render(_ value: Double, decimals: Int) -> String {
        let scaled = Int((value * pow10(decimals)).rounded())
        guard decimals > 0 else { return String(scaled) }
        let divisor = Int(pow10(decimals))
        let fraction = String(scaled % divisor)
        return "\(scaled / divisor)." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }

    private static func twoDigits(_ value: Int) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// The multiplier of a lowercased unit: `""`, `b`, or a prefix letter, optional `i`, optional `b`.
    private static func multiplier(unit: ArraySlice<UInt8>) -> Int? {
        var rest = unit
        guard let letter = rest.popFirst() else { return 1 }
        if letter == UInt8(ascii: "b") { return rest.isEmpty ? 1 : nil }
        guard let power = Array("kmgtpe".utf8).firstIndex(of: letter) else { return nil }
        if rest.first == UInt8(ascii: "i") { rest.removeFirst() }
        if rest.first == UInt8(ascii: "b") { rest.removeFirst() }
        return rest.isEmpty ? 1 << (10 * (power + 1)) : nil
    }

    /// `0.digits × multiplier`, rounded down, computed exactly in integers.
    private static func fractionBytes(_ digits: ArraySlice<UInt8>, multiplier: Int) -> Int {
        // 18 digits fit in Int; later ones change the result by far less than a byte.
        let kept = digits.prefix(18)
        guard let numerator = Syntax.decimal(kept) else { return 0 }
        let denominator = (0..<kept.count).reduce(1) { value, _ in value * 10 }
        let product = numerator.multipliedFullWidth(by: multiplier)
        return denominator.dividingFullWidth(product).quotient
    }
}
