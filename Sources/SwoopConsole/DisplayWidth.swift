/// How many terminal columns text takes, and cutting text to a number of columns.
///
/// Counted per Unicode scalar: East Asian wide and fullwidth characters (and the common emoji
/// blocks) take 2 columns, combining marks and other zero-width scalars 0, everything else 1.
/// A range check, not the full Unicode width tables: where a terminal might disagree it errs
/// towards counting too many columns, which leaves a line short rather than wrapping it.
public enum DisplayWidth: Sendable {
    /// The number of columns `text` takes on a terminal.
    ///
    /// - Parameter text: Text without control characters (see ``sanitized(_:)``).
    /// - Returns: The sum of the columns of its scalars.
    public static func of<S: StringProtocol>(_ text: S) -> Int {
        text.unicodeScalars.reduce(0) { $0 + columns($1) }
    }

    /// The columns one scalar takes: 0, 1 or 2.
    public static func columns(_ scalar: Unicode.Scalar) -> Int {
        let v = scalar.value
        if v < 0x300 { return v < 0x20 || (0x7F..<0xA0).contains(v) ? 0 : 1 }
        if zeroWidth.contains(where: { $0.contains(v) }) { return 0 }
        if wide.contains(where: { $0.contains(v) }) { return 2 }
        return 1
    }

    /// `text` with control characters (C0, DEL, C1) replaced by `?`, so a file name from a
    /// server cannot move the cursor or change colours.
    public static func sanitized(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            scalars.append(isControl(scalar) ? "?" : scalar)
        }
        return String(scalars)
    }

    /// The longest prefix of `text` that fits in `limit` columns; cuts between characters, never inside one.
    public static func prefix(_ text: Substring, fitting limit: Int) -> Substring {
        var used = 0
        var end = text.startIndex
        for index in text.indices {
            used += of(text[index...index])
            guard used <= limit else { break }
            end = text.index(after: index)
        }
        return text[..<end]
    }

    /// The longest suffix of `text` that fits in `limit` columns; cuts between characters, never inside one.
    public static func suffix(_ text: Substring, fitting limit: Int) -> Substring {
        var used = 0
        var start = text.endIndex
        while start > text.startIndex {
            let previous = text.index(before: start)
            used += of(text[previous..<start])
            guard used <= limit else { break }
            start = previous
        }
        return text[start...]
    }

    /// `text` cut to `limit` columns, ending in `…` when anything was cut.
    ///
    /// - Parameters:
    ///   - text: The text to fit.
    ///   - limit: The most columns the result may take; 0 or less gives `""`.
    public static func clipped(_ text: String, to limit: Int) -> String {
        guard of(text) > limit else { return text }
        guard limit > 0 else { return "" }
        return prefix(text[...], fitting: limit - 1) + "…"
    }

    /// `name` cut in the middle to fit `limit` columns, keeping its extension: `ubuntu-2…d64.iso`.
    ///
    /// The kept end is half the room or the extension (the last `.` and what follows it), whichever
    /// is wider, as long as at least one character of the start still fits beside it.
    ///
    /// - Parameters:
    ///   - name: A file name without control characters.
    ///   - limit: The most columns the result may take; 0 or less gives `""`.
    /// - Returns: `name` itself when it fits.
    public static func middleTruncated(_ name: String, to limit: Int) -> String {
        guard of(name) > limit else { return name }
        guard limit > 1 else { return limit == 1 ? "…" : "" }
        let room = limit - 1
        var tailWidth = room / 2
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            let extensionWidth = of(name[dot...])
            if extensionWidth < room { tailWidth = max(tailWidth, extensionWidth) }
        }
        let tail = suffix(name[...], fitting: tailWidth)
        let head = prefix(name[..<tail.startIndex], fitting: room - of(tail))
        return head + "…" + tail
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value)
    }

    /// Combining marks, zero-width spaces and joiners, variation selectors.
    private static let zeroWidth: [ClosedRange<UInt32>] = [
        0x0300...0x036F, 0x0483...0x0489, 0x0591...0x05BD, 0x0610...0x061A, 0x064B...0x065F,
        0x0E31...0x0E31, 0x0E34...0x0E3A, 0x1AB0...0x1AFF, 0x1DC0...0x1DFF, 0x200B...0x200F,
        0x20D0...0x20FF, 0xFE00...0xFE0F, 0xFE20...0xFE2F, 0xE0100...0xE01EF,
    ]

    /// East Asian Wide and Fullwidth blocks, and the emoji blocks terminals draw two columns wide.
    private static let wide: [ClosedRange<UInt32>] = [
        0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x23E9...0x23EC, 0x2E80...0x303E,
        0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F,
        0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60,
        0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD,
    ]
}
