import Foundation

/// Parses and formats HTTP dates (RFC 9110 §5.6.7) without `DateFormatter`.
///
/// `DateFormatter` is slow to create and, on Linux, depends on the process locale and
/// ICU data; HTTP dates are a fixed, English, GMT-only format that a small hand-written
/// parser handles exactly. All arithmetic is proleptic Gregorian in UTC.
public enum HTTPDate: Sendable {
    /// Parses an HTTP date in any of the three formats HTTP/1.1 allows.
    ///
    /// Accepted: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
    /// (`Sunday, 06-Nov-94 08:49:37 GMT`, two-digit years read as RFC 9110 says: a year
    /// that would be more than 50 years in the future is in the previous century) and
    /// ANSI C asctime (`Sun Nov  6 08:49:37 1994`). Names are matched case-insensitively,
    /// runs of spaces count as one, `UTC` is accepted for `GMT`, and the weekday must be a
    /// weekday name but is not checked against the date. Out-of-range fields (30 Feb,
    /// 24:00:00) are rejected; a leap second (`:60`) is accepted.
    ///
    /// - Parameter s: The header value.
    /// - Returns: The instant, or `nil` if `s` is not an HTTP date.
    public static func parse(_ s: String) -> Date? {
        parse(s, now: Date())
    }

    /// Formats `d` as an IMF-fixdate, the only format HTTP senders may generate.
    ///
    /// Fractional seconds are dropped. Dates before year 1 or after year 9999, which the
    /// four-digit year cannot express, are clamped to those years' first and last second;
    /// a NaN date formats as the epoch.
    ///
    /// - Parameter d: The instant to format.
    /// - Returns: For example `Sun, 06 Nov 1994 08:49:37 GMT`.
    public static func format(_ d: Date) -> String {
        let interval = d.timeIntervalSince1970
        let clamped = interval.isNaN ? 0 : min(max(interval, Double(earliest)), Double(latest))
        let seconds = Int(clamped.rounded(.down))
        let days = floorDivide(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        let weekday = ((days + 4) % 7 + 7) % 7  // 1970-01-01 was a Thursday.
        return "\(weekdays[weekday]), \(pad(day, 2)) \(months[month - 1]) \(pad(year, 4)) "
            + "\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)) GMT"
    }

    /// ``parse(_:)`` with the reference instant for two-digit RFC 850 years made explicit.
    static func parse(_ s: String, now: Date) -> Date? {
        let fields = s.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard let first = fields.first else { return nil }
        if first.hasSuffix(",") {
            guard isWeekday(first.dropLast()) else { return nil }
            switch fields.count {
            case 6: return parseIMFFixdate(fields)
            case 4: return parseRFC850(fields, now: now)
            default: return nil
            }
        }
        guard fields.count == 5, isWeekday(first) else { return nil }
        return parseAsctime(fields)
    }

    // MARK: - The three formats

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func parseIMFFixdate(_ fields: [Substring]) -> Date? {
        guard isGMT(fields[5]),
            let day = number(fields[1], digits: 1...2),
            let month = month(fields[2]),
            let year = number(fields[3], digits: 4...4)
        else { return nil }
        return date(year: year, month: month, day: day, time: fields[4])
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT` (a four-digit year is tolerated).
    private static func parseRFC850(_ fields: [Substring], now: Date) -> Date? {
        let parts = fields[1].split(separator: "-", omittingEmptySubsequences: false)
        guard isGMT(fields[3]), parts.count == 3,
            let day = number(parts[0], digits: 1...2),
            let month = month(parts[1])
        else { return nil }
        let year: Int
        if let twoDigit = number(parts[2], digits: 2...2) {
            year = expandTwoDigitYear(twoDigit, now: now)
        } else if let fourDigit = number(parts[2], digits: 4...4) {
            year = fourDigit
        } else {
            return nil
        }
        return date(year: year, month: month, day: day, time: fields[2])
    }

    /// `Sun Nov  6 08:49:37 1994`
    private static func parseAsctime(_ fields: [Substring]) -> Date? {
        guard let month = month(fields[1]),
            let day = number(fields[2], digits: 1...2),
            let year = number(fields[4], digits: 4...4)
        else { return nil }
        return date(year: year, month: month, day: day, time: fields[3])
    }

    // MARK: - Fields

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longWeekdays = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Seconds since 1970 of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
    private static let earliest = days(fromYear: 1, month: 1, day: 1) * 86_400
    private static let latest = days(fromYear: 9999, month: 12, day: 31) * 86_400 + 86_399

    private static func isWeekday(_ field: Substring) -> Bool {
        let lower = field.lowercased()
        return weekdays.contains { $0.lowercased() == lower } || longWeekdays.contains(lower)
    }

    private static func isGMT(_ field: Substring) -> Bool {
        let upper = field.uppercased()
        return upper == "GMT" || upper == "UTC"
    }

    /// The month number (1–12) of a three-letter English month name.
    private static func month(_ field: Substring) -> Int? {
        let lower = field.lowercased()
        return months.firstIndex { $0.lowercased() == lower }.map { $0 + 1 }
    }

    /// A decimal of ASCII digits whose length is in `digits`.
    private static func number(_ field: Substring, digits: ClosedRange<Int>) -> Int? {
        let bytes = field.utf8
        guard digits.contains(bytes.count), bytes.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// The year ending in `twoDigit` that lies within 50 years of `now`'s year, with ties
    /// going to the future: RFC 9110 reads a year "more than 50 years in the future" as
    /// the most recent past one with the same last two digits.
    static func expandTwoDigitYear(_ twoDigit: Int, now: Date) -> Int {
        let interval = now.timeIntervalSince1970
        let nowSeconds = interval.isNaN ? 0 : Int(min(max(interval, Double(earliest)), Double(latest)))
        let currentYear = civil(fromDays: floorDivide(nowSeconds, 86_400)).year
        let candidate = currentYear - currentYear % 100 + twoDigit
        if candidate > currentYear + 50 { return candidate - 100 }
        if candidate <= currentYear - 50 { return candidate + 100 }
        return candidate
    }

    /// The instant for a validated calendar date and an `HH:MM:SS` field.
    private static func date(year: Int, month: Int, day: Int, time: Substring) -> Date? {
        let parts = time.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let hour = number(parts[0], digits: 2...2), hour < 24,
            let minute = number(parts[1], digits: 2...2), minute < 60,
            let second = number(parts[2], digits: 2...2), second <= 60,
            day >= 1, day <= daysInMonth(year: year, month: month)
        else { return nil }
        let days = days(fromYear: year, month: month, day: day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    // MARK: - Calendar arithmetic (Howard Hinnant's days_from_civil / civil_from_days)

    static func isLeapYear(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the given proleptic Gregorian date.
    static func days(fromYear year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivide(y, 400)
        let yearOfEra = y - era * 400
        let shiftedMonth = (month + 9) % 12  // March is 0, so the leap day ends the year.
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date `days` after 1970-01-01.
    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func floorDivide(_ a: Int, _ b: Int) -> Int {
        let quotient = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? quotient - 1 : quotient
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
