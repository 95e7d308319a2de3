/// Finding a download by its id or a prefix of it, as aria2 accepts a unique prefix of a GID.
extension Download.ID {
    /// The one id among `ids` that is `text` or starts with it (hex digits, any case).
    ///
    /// - Throws: ``SwoopError/Code/invalidArgument`` for text that is not hex digits or matches
    ///   several downloads; ``SwoopError/Code/notFound`` when it matches none.
    public static func resolve(_ text: String, among ids: some Sequence<Download.ID>) throws -> Download.ID {
        let needle = text.lowercased()
        guard !needle.isEmpty, needle.utf8.count <= 16, isHex(needle) else {
            throw SwoopError(.invalidArgument, "'\(text)' is not a download id (16 hex digits, or a unique prefix of one)")
        }
        var matches: [Download.ID] = []
        for id in ids {
            if id.rawValue == needle { return id }
            if id.rawValue.hasPrefix(needle) { matches.append(id) }
        }
        if matches.count == 1 { return matches[0] }
        if matches.isEmpty { throw SwoopError(.notFound, "no download with id \(text)") }
        // A few, to pick from.
        let shown = matches.prefix(3).map(\.rawValue).joined(separator: ", ") + (matches.count > 3 ? ", …" : "")
        throw SwoopError(.invalidArgument, "download id \(text) is ambiguous: it matches \(matches.count) downloads (\(shown))")
    }
}
