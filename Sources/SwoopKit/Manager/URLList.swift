/// The input-file format of `swoop get -i FILE`: one download per line.
///
/// ```
/// # comments and blank lines are skipped
/// https://example.com/a.iso
/// https://example.com/b.iso   b-renamed.iso
/// https://one.example/c.iso<TAB>https://two.example/c.iso<TAB>c.iso
/// ```
///
/// A line is a URL, optionally followed by whitespace and the file name to save it as (the rest of
/// the line, so names may contain spaces). Leading and trailing whitespace is ignored; a line whose
/// first non-blank character is `#` is a comment. A URL cannot contain a space, so the first run of
/// whitespace ends it: any Unicode space (a non-breaking one pasted from a web page is no part of
/// the URL). URLs separated by TABs (as in aria2's input files) are one file's mirrors; a field
/// after them that is no URL is the file name. Lines end with LF, CRLF or a lone CR (a list saved
/// by an old Mac editor).
public enum URLList {
    /// One download from the list.
    public struct Entry: Sendable, Hashable {
        /// The URL text as written.
        public var url: String
        /// The file name given after the URL, if any.
        public var fileName: String?
        /// More URLs of the same file, given after the first with TABs between.
        public var mirrors: [String] = []
        /// The 1-based line number, for error messages (0 when not from a file).
        public var line: Int

        /// Creates an entry.
        public init(url: String, fileName: String? = nil, line: Int = 0, mirrors: [String] = []) {
            self.url = url
            self.fileName = fileName
            self.line = line
            self.mirrors = mirrors
        }
    }

    /// Where `bytes` first stop being UTF-8: the 1-based line and the byte's 1-based place in it,
    /// and the byte; `nil` for UTF-8 text. A list saved in Latin-1 is refused whole, and this names
    /// the line to mend.
    public static func firstNonUTF8<Bytes: Collection<UInt8>>(in bytes: Bytes) -> (line: Int, column: Int, byte: UInt8)? {
        // Line breaks are ASCII: no sequence spans one, so each line is checked alone.
        for (number, line) in lines(of: bytes).enumerated() {
            var iterator = line.makeIterator()
            var parser = Unicode.UTF8.ForwardParser()
            var position = 0
            scan: while true {
                switch parser.parseScalar(from: &iterator) {
                case .valid(let scalar):
                    position += scalar.count
                case .emptyInput:
                    break scan
                case .error:
                    return (number + 1, position + 1, line[line.index(line.startIndex, offsetBy: position)])
                }
            }
        }
        return nil
    }

    /// Splits a list into entries. Pure: URLs and names are validated when the requests are made.
    ///
    /// Lines are cut at their line-break bytes (`\n`, `\r\n` and a lone `\r` each end a `Character`). A
    /// line of printable ASCII, nearly every line of a long list, is read as bytes; any other is
    /// read by `Character`s. Reading every line so took 47,000 instructions a line, a twentieth of
    /// all `swoop get -i` did per small file.
    public static func parse(_ text: String) -> [Entry] {
        var entries: [Entry] = []
        var number = 0
        for rawLine in lines(of: text.utf8) {
            number += 1
            let entry = rawLine.allSatisfy({ (0x20..<0x80).contains($0) })
                ? plainEntry(rawLine, number: number) : entry(Substring(rawLine), number: number)
            if let entry { entries.append(entry) }
        }
        return entries
    }

    /// The lines of `bytes`, each without its break: LF, CRLF or a lone CR.
    static func lines<Bytes: Collection<UInt8>>(of bytes: Bytes) -> [Bytes.SubSequence] {
        var lines: [Bytes.SubSequence] = []
        var start = bytes.startIndex
        var index = start
        while index != bytes.endIndex {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") else {
                index = bytes.index(after: index)
                continue
            }
            lines.append(bytes[start..<index])
            index = bytes.index(after: index)
            if byte == UInt8(ascii: "\r"), index != bytes.endIndex, bytes[index] == UInt8(ascii: "\n") {
                index = bytes.index(after: index)
            }
            start = index
        }
        lines.append(bytes[start..<bytes.endIndex])
        return lines
    }

    /// A line of printable ASCII: its URL and the name after the first space, if any; `nil` for
    /// a blank line or a comment.
    private static func plainEntry(_ rawLine: Substring.UTF8View, number: Int) -> Entry? {
        let line = rawLine.trimmingBlanks()
        guard let first = line.first, first != UInt8(ascii: "#") else { return nil }
        guard let gap = line.firstIndex(of: UInt8(ascii: " ")) else {
            return Entry(url: String(Substring(line)), fileName: nil, line: number)
        }
        let name = line[gap...].trimmingBlanks()
        return Entry(url: String(Substring(line[..<gap])), fileName: name.isEmpty ? nil : String(Substring(name)), line: number)
    }

    /// Any line, read by `Character`s; `nil` for a blank line or a comment.
    static func entry(_ rawLine: Substring, number: Int) -> Entry? {
        let line = rawLine.trimmingWhitespace()
        guard !line.isEmpty, !line.hasPrefix("#") else { return nil }
        if let mirrored = mirrorsEntry(line, number: number) {
            return mirrored
        } else if let gap = line.firstIndex(where: \.isGap) {
            let name = line[gap...].trimmingWhitespace()
            return Entry(url: String(line[..<gap]), fileName: name.isEmpty ? nil : String(name), line: number)
        } else {
            return Entry(url: String(line), fileName: nil, line: number)
        }
    }

    /// A line of TAB-separated URLs (mirrors), the file name after them (its own field, or after
    /// spaces in the last URL's field); `nil` for a line that is not one.
    private static func mirrorsEntry(_ line: Substring, number: Int) -> Entry? {
        let fields = line.split(separator: "\t").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
        guard fields.count > 1 else { return nil }
        var urls: [String] = []
        var name: String?
        for (index, field) in fields.enumerated() {
            guard field.contains("://") else {
                name = fields[index...].joined(separator: " ")
                break
            }
            if let gap = field.firstIndex(where: \.isGap) {
                urls.append(String(field[..<gap]))
                let after = ([field[gap...].trimmingWhitespace()] + fields[(index + 1)...]).filter { !$0.isEmpty }.joined(separator: " ")
                name = after.isEmpty ? nil : after
                break
            }
            urls.append(String(field))
        }
        // One URL and a name is the plain form; a first field that is no URL is not a list of mirrors.
        guard urls.count > 1, fields[0].contains("://") else { return nil }
        return Entry(url: urls[0], fileName: name, line: number, mirrors: Array(urls.dropFirst()))
    }
}

extension Substring.UTF8View {
    /// Without the spaces at either end (in a line of printable ASCII, the only blanks
    /// ``Substring/trimmingWhitespace()`` would trim).
    fileprivate func trimmingBlanks() -> Substring.UTF8View {
        let isBlank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}

extension Character {
    /// A space between a URL and a name: a character of one scalar that Unicode calls white space
    /// (a space, a TAB, a non-breaking or an ideographic space). A space with a combining mark on it
    /// is a character of the name, not a gap.
    fileprivate var isGap: Bool {
        unicodeScalars.count == 1 && unicodeScalars.first?.properties.isWhitespace == true
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        let isBlank: (Character) -> Bool = { $0.isGap || $0 == "\u{FEFF}" }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
