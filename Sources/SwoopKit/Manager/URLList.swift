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
/// whitespace ends it. URLs separated by TABs (as in aria2's input files) are one file's mirrors;
/// a field after them that is no URL is the file name.
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

    /// Splits a list into entries. Pure: URLs and names are validated when the requests are made.
    public static func parse(_ text: String) -> [Entry] {
        var entries: [Entry] = []
        var number = 0
        // "\r\n" is one Character in Swift: both line ends must be named.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            let line = rawLine.trimmingWhitespace()
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            if let mirrored = mirrorsEntry(line, number: number) {
                entries.append(mirrored)
            } else if let gap = line.firstIndex(where: { $0 == " " || $0 == "\t" }) {
                let name = line[gap...].trimmingWhitespace()
                entries.append(Entry(url: String(line[..<gap]), fileName: name.isEmpty ? nil : String(name), line: number))
            } else {
                entries.append(Entry(url: String(line), fileName: nil, line: number))
            }
        }
        return entries
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
            if let gap = field.firstIndex(where: { $0 == " " }) {
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

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\u{FEFF}" }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
