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
            let fields = line.split(separator: "\t").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
            if fields.count > 1, fields[1].contains("://") {
                // Mirrors: the URL fields, then perhaps a file name.
                let urls = fields.prefix { $0.contains("://") && !$0.contains(" ") }
                let name = fields.dropFirst(urls.count).joined(separator: " ")
                entries.append(
                    Entry(url: String(urls[urls.startIndex]), fileName: name.isEmpty ? nil : name, line: number, mirrors: urls.dropFirst().map(String.init))
                )
            } else if let gap = line.firstIndex(where: { $0 == " " || $0 == "\t" }) {
                let name = line[gap...].trimmingWhitespace()
                entries.append(Entry(url: String(line[..<gap]), fileName: name.isEmpty ? nil : String(name), line: number))
            } else {
                entries.append(Entry(url: String(line), fileName: nil, line: number))
            }
        }
        return entries
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
