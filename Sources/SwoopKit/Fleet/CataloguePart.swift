import Foundation

/// One part of a download split across a fleet's nodes (a shared download directory): a byte range
/// of one file that every node reaches at the same ``path``, and what proves that the server still
/// has the file the split was made for. Stored with the part's catalogue entry (as JSON).
public struct CataloguePart: Sendable, Hashable, Codable {
    /// The part file every node writes its ranges into (in the shared directory).
    public var path: String
    /// The name the finished file takes, beside the part file.
    public var fileName: String
    /// The first byte of this part.
    public var start: Int
    /// The last byte of this part (inclusive).
    public var end: Int
    /// The whole file's length.
    public var length: Int
    /// The file's strong ETag when it had one (sent as `If-Range`, and compared with each answer's).
    public var etag: String?
    /// Its Last-Modified, sent as `If-Range` when there is no strong ETag.
    public var lastModified: String?

    public init(path: String, fileName: String, start: Int, end: Int, length: Int, etag: String?, lastModified: String?) {
        self.path = path
        self.fileName = fileName
        self.start = start
        self.end = end
        self.length = length
        self.etag = etag
        self.lastModified = lastModified
    }

    /// How many bytes this part holds.
    public var count: Int { end - start + 1 }

    /// As stored in the catalogue.
    public var json: String {
        (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// A stored part, or `nil` for none (or for text this swoop cannot read).
    public init?(json: String?) {
        guard let json, !json.isEmpty, let part = try? JSONDecoder().decode(CataloguePart.self, from: Data(json.utf8)) else { return nil }
        self = part
    }

    /// The validator a part's request sends as `If-Range`: the strong ETag, else Last-Modified.
    public var ifRange: String? { etag ?? lastModified }

    /// Why an answer to this part's request, asked from `offset` on, must not be written: `nil`
    /// when it is the `206` of exactly the rest of this part of the same file. A `200` means the
    /// file changed (`If-Range` did not match) or the server stopped serving ranges.
    public func refusal(status: Int, contentRange: String?, etag answered: String?, from offset: Int, url: String) -> String? {
        guard status == 206 else {
            if status == 200 { return "\(url) answered with the whole file, not the range asked for: the file changed on the server, or it no longer serves ranges" }
            return "\(url) answered HTTP \(status)"
        }
        guard let range = contentRange.flatMap(ContentRange.init(parsing:)) else {
            return "\(url) answered 206 without a Content-Range this swoop can read (\(contentRange ?? "none"))"
        }
        guard range.total == length else {
            return "\(url) now has \(range.total.map(String.init) ?? "an unknown number of") bytes, not \(length): the file changed on the server"
        }
        guard range.start == offset, range.end == end else {
            return "\(url) answered bytes \(range.start)-\(range.end) where \(offset)-\(end) were asked for"
        }
        if let etag, let answered, answered != etag {
            return "\(url) now has ETag \(answered), not \(etag): the file changed on the server"
        }
        return nil
    }

    /// The parts a file of `length` bytes is split into: ranges of `size` bytes (the last one
    /// shorter), in order. Empty for an empty file.
    public static func ranges(length: Int, size: Int) -> [ClosedRange<Int>] {
        guard length > 0 else { return [] }
        let size = max(1, size)
        return stride(from: 0, to: length, by: size).map { $0...min(length - 1, $0 + size - 1) }
    }
}
