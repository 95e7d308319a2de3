/// What the answer of a source other than the one that wrote the saved bytes must show before
/// they are continued from it: a download moved to a new URL (``SourceChange``), a mirror taking
/// segments, a mirror taking over when the URL fails for good. Pure.
///
/// A `206` that merely shows nothing contradicting the saved bytes is not enough from another
/// source: a server without validators would splice its file onto another's. Every proof includes
/// the saved length.
enum SourceProof: Sendable, Hashable, CaseIterable {
    /// The saved strong ETag, shown by the source itself.
    case strongETag
    /// The saved Last-Modified date: kept on the user's trust (`--trust-mirror-length`), two files
    /// can share it.
    case lastModified
    /// The length alone: a checksum verifies the finished file.
    case length

    /// The proof a download's new URL owes: its strong ETag, or the date it was trusted with.
    static func forMovedURL(strongETag: String?) -> SourceProof {
        strongETag != nil ? .strongETag : .lastModified
    }

    /// The proof a mirror owes: the strong ETag, unless a checksum verifies the result.
    static func forMirror(verifiedByChecksum: Bool) -> SourceProof {
        verifiedByChecksum ? .length : .strongETag
    }

    /// The validators a request to the source carries (as `If-Range`): another server's date for
    /// the file may differ, so only what the proof compares.
    func asked(_ saved: SavedRepresentation) -> SavedRepresentation {
        var asked = saved
        switch self {
        case .strongETag: asked.lastModified = nil
        case .lastModified: asked.etag = nil
        case .length: (asked.etag, asked.lastModified) = (nil, nil)
        }
        return asked
    }

    /// Why a `206` does not prove that the source serves the saved file, or `nil` when it does.
    func refusal(of head: ResponseHead, saved: SavedRepresentation) -> String? {
        let total = head.contentRange.flatMap(ContentRange.init(parsing:))?.total
        guard let total, total == saved.totalBytes else {
            return "it serves another length (\(total.map { "\($0)" } ?? "unknown") bytes, the saved file has \(saved.totalBytes.map { "\($0)" } ?? "unknown"))"
        }
        switch self {
        case .length:
            return nil
        case .strongETag:
            guard let etag = saved.strongETag else { return "the saved bytes have no strong ETag to check it against" }
            guard let shown = head.etag else { return "it shows no ETag (the saved bytes have \(etag))" }
            return shown == etag ? nil : "its ETag \(shown) is not the download's \(etag)"
        case .lastModified:
            guard let date = saved.lastModified else { return "the saved bytes have no Last-Modified date to check it against" }
            guard let shown = head.lastModified else { return "it shows no Last-Modified date (the saved bytes have \(date))" }
            return shown == date ? nil : "its Last-Modified \(shown) is not the download's \(date)"
        }
    }
}
