import Foundation

/// What the store knows about a partly downloaded representation.
struct SavedRepresentation: Sendable, Hashable {
    /// Bytes of the part file that can be trusted.
    var offset: Int
    var totalBytes: Int?
    var etag: String?
    var lastModified: String?

    /// A strong ETag (weak ones must not be used with `If-Range`, RFC 9110 §13.1.5).
    var strongETag: String? { Self.strong(etag) }

    /// An ETag if it is strong, else `nil`.
    static func strong(_ etag: String?) -> String? {
        guard let etag, !etag.hasPrefix("W/") else { return nil }
        return etag
    }
}

/// The parts of a response head that resume decisions look at.
struct ResponseHead: Sendable, Hashable {
    var status: Int
    var etag: String?
    var lastModified: String?
    var contentLength: Int?
    var contentRange: String?
}

/// Pure resume logic: which headers a resumed request carries, and what a response means for the
/// part file. Never blind: a response that cannot be proven to continue the same representation
/// starts the file again from zero.
enum ResumeDecision: Sendable, Hashable {
    /// Write the body at `offset` (0 = a fresh start, after truncating the part file). `restartReason`
    /// says why saved progress was thrown away, when it was.
    case write(offset: Int, totalBytes: Int?, restartReason: String?)
    /// Truncate the part file and ask again without a range, for `reason`.
    case restart(reason: String)
    /// The part file already holds the whole representation.
    case complete
    /// The server answered with an error status.
    case status(Int)

    /// The headers that make a resumed request safe, or `nil` when the saved bytes cannot be
    /// validated and the download must start from zero.
    static func rangeHeaders(for saved: SavedRepresentation) -> [(name: String, value: String)]? {
        guard saved.offset > 0 else { return [] }
        let range = ("Range", ContentRange.requestHeader(from: saved.offset))
        if let etag = saved.strongETag {
            return [range, ("If-Range", etag)]
        }
        if let lastModified = saved.lastModified {
            return [range, ("If-Range", lastModified)]
        }
        if saved.totalBytes != nil {
            // No validator: Content-Range's total is the only check, better than nothing but only
            // used when the length is known.
            return [range]
        }
        return nil
    }

    /// Decides what a response means, given what was asked for.
    ///
    /// - Parameters:
    ///   - head: The response.
    ///   - saved: What the part file holds; `offset` is 0 for a request without `Range`.
    static func decide(_ head: ResponseHead, saved: SavedRepresentation) -> ResumeDecision {
        switch head.status {
        case 200:
            guard saved.offset > 0 else {
                return .write(offset: 0, totalBytes: head.contentLength, restartReason: nil)
            }
            let reason = changeReason(head, saved: saved, newTotal: head.contentLength)
                ?? "the server ignored the range request"
            return .write(offset: 0, totalBytes: head.contentLength, restartReason: reason)
        case 206:
            guard let rangeText = head.contentRange, let range = ContentRange(parsing: rangeText) else {
                return .restart(reason: "the server sent a partial response without a valid Content-Range")
            }
            if let reason = changeReason(head, saved: saved, newTotal: range.total) {
                return .restart(reason: reason)
            }
            guard range.start == saved.offset else {
                return .restart(reason: "the server resumed at byte \(range.start) instead of \(saved.offset)")
            }
            guard let total = range.total ?? saved.totalBytes else {
                return .restart(reason: "the server did not say the file's length when resuming")
            }
            if let length = head.contentLength, length != range.end - range.start + 1 {
                return .restart(reason: "the server's Content-Length does not match its Content-Range")
            }
            return .write(offset: saved.offset, totalBytes: total, restartReason: nil)
        case 416 where saved.offset == 0:
            return .status(416)
        case 416:
            if let text = head.contentRange, let unsatisfied = UnsatisfiedRange(parsing: text),
                unsatisfied.total == saved.offset, saved.totalBytes == nil || saved.totalBytes == saved.offset
            {
                return .complete
            }
            return .restart(reason: "the server could not satisfy the range (the file may have shrunk)")
        default:
            return .status(head.status)
        }
    }

    /// Why the response is not the saved representation, or `nil` when nothing shows a change.
    private static func changeReason(_ head: ResponseHead, saved: SavedRepresentation, newTotal: Int?) -> String? {
        if let old = saved.etag, let new = head.etag, old != new {
            return "the file changed on the server (ETag \(old) → \(new))"
        }
        if let old = saved.lastModified, let new = head.lastModified, old != new {
            return "the file changed on the server (Last-Modified \(old) → \(new))"
        }
        if let old = saved.totalBytes, let new = newTotal, old != new {
            return "the file changed on the server (length \(old) → \(new) bytes)"
        }
        return nil
    }
}
