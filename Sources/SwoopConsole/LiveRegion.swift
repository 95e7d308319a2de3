/// The bytes that redraw a block of lines in place at the bottom of a terminal.
///
/// The region's lines are written without a trailing newline, so the cursor rests at the end of
/// its last line. A frame goes back to the start of the first line (`\r`, then `ESC[nA`), writes
/// each new line followed by `ESC[K` (clear the rest of the line: no blank-then-draw flicker) and,
/// when the region shrank, `ESC[J` to clear the leftover lines below. Lines must already fit the
/// terminal width minus one; a line that wraps would throw the cursor arithmetic off.
public enum LiveRegion: Sendable {
    /// Clears from the cursor to the end of the line.
    public static let clearLine = "\u{1B}[K"
    /// Clears from the cursor to the end of the screen.
    public static let clearBelow = "\u{1B}[J"

    /// The bytes that replace the region on screen with `lines`.
    ///
    /// - Parameters:
    ///   - previousLineCount: How many lines the region has on screen now (0 when none; the
    ///     cursor is then at the start of an empty line).
    ///   - lines: The new lines, top to bottom; empty erases the region.
    /// - Returns: One string to write with a single `write(2)`. After it the cursor is at the end
    ///   of the last new line, or at the start of the region's first line when `lines` is empty.
    public static func frame(previousLineCount: Int, lines: [String]) -> String {
        var frame = ""
        if previousLineCount > 0 {
            frame += "\r"
            if previousLineCount > 1 { frame += "\u{1B}[\(previousLineCount - 1)A" }
        }
        frame += lines.map { $0 + clearLine }.joined(separator: "\n")
        if lines.count < previousLineCount { frame += clearBelow }
        return frame
    }

    /// The bytes that print `text` (one or more whole lines) above the region and draw the region again below it.
    ///
    /// - Parameters:
    ///   - text: What to print, ending in a newline.
    ///   - previousLineCount: How many lines the region has on screen now, when not `lines.count`
    ///     (a region drawn again with fewer lines).
    ///   - lines: The region's lines, drawn again after `text`.
    /// - Returns: One string to write with a single `write(2)`.
    public static func printAbove(_ text: String, previousLineCount: Int? = nil, lines: [String]) -> String {
        frame(previousLineCount: previousLineCount ?? lines.count, lines: []) + text + frame(previousLineCount: 0, lines: lines)
    }
}
