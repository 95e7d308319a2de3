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
        var found: Download.ID?
        var count = 0
        for id in ids {
            if id.rawValue == needle { return id }
            if id.rawValue.hasPrefix(needle) {
                found = id
                count += 1
            }
        }
        if count == 1, let found { return found }
        if count == 0 { throw SwoopError(.notFound, "no download with id \(text)") }
        throw SwoopError(.invalidArgument, "download id \(text) is ambiguous: it matches \(count) downloads")
    }
}
