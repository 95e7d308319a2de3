/// A file the ``TestServer`` serves at a path, with the validators and framing it answers with.
///
/// A `GET` answers `200` with the whole body, or `206` with one byte range when the request carries
/// a single `Range: bytes=N-`, `bytes=N-M` or `bytes=-SUFFIX` and ``acceptRanges`` is `true`.
/// A range starting at or beyond the end answers `416` with `Content-Range: bytes */TOTAL`.
/// Malformed or multi-range `Range` headers are ignored (a plain `200`), as RFC 9110 allows.
/// `If-Range` is honoured: the range is served only when it equals the strong ``etag`` or,
/// byte for byte, ``lastModified``; otherwise the whole body is sent with `200`.
/// `If-None-Match` matching ``etag`` (weak comparison) or `*` answers `304`; without `If-None-Match`,
/// an `If-Modified-Since` equal to ``lastModified`` (the exact text) answers `304` too.
public struct Resource: Sendable {
    /// The bytes of the representation, sent as they are (already compressed when ``gzip`` is set).
    public var body: [UInt8]
    /// The `ETag` header value, sent verbatim, for example `"\"v1\""` or `"W/\"v1\""`.
    public var etag: String?
    /// The `Last-Modified` header value, an HTTP-date sent verbatim.
    public var lastModified: String?
    /// The `Content-Disposition` header value, sent verbatim.
    public var contentDisposition: String?
    /// The `Content-Type` header value.
    public var contentType: String
    /// Whether `Range` requests are honoured and `Accept-Ranges: bytes` is advertised.
    ///
    /// When `false`, `Range` is ignored and every `GET` answers `200` with the whole body.
    public var acceptRanges: Bool
    /// Whether the body is framed with `Transfer-Encoding: chunked` instead of `Content-Length`.
    public var chunked: Bool
    /// Whether `Content-Encoding: gzip` is sent; ``body`` must already hold the compressed bytes.
    ///
    /// Ranges then address the compressed bytes, as with a pre-compressed file on a real server.
    public var gzip: Bool
    /// More response headers, appended in order after the standard ones.
    public var extraHeaders: [(String, String)]

    /// Creates a resource.
    ///
    /// - Parameters:
    ///   - body: The bytes to serve.
    ///   - etag: The `ETag` value, verbatim (quotes included), or `nil` to send none.
    ///   - lastModified: The `Last-Modified` HTTP-date, verbatim, or `nil` to send none.
    ///   - contentDisposition: The `Content-Disposition` value, or `nil` to send none.
    ///   - contentType: The `Content-Type` value.
    ///   - acceptRanges: Whether single byte ranges are honoured.
    ///   - chunked: Whether to use chunked transfer coding instead of `Content-Length`.
    ///   - gzip: Whether to label `body` as `Content-Encoding: gzip`.
    ///   - extraHeaders: Further headers to send, in order.
    public init(
        body: [UInt8],
        etag: String? = nil,
        lastModified: String? = nil,
        contentDisposition: String? = nil,
        contentType: String = "application/octet-stream",
        acceptRanges: Bool = true,
        chunked: Bool = false,
        gzip: Bool = false,
        extraHeaders: [(String, String)] = []
    ) {
        self.body = body
        self.etag = etag
        self.lastModified = lastModified
        self.contentDisposition = contentDisposition
        self.contentType = contentType
        self.acceptRanges = acceptRanges
        self.chunked = chunked
        self.gzip = gzip
        self.extraHeaders = extraHeaders
    }

    /// Makes deterministic pseudo-random bytes: the same `size` and `seed` always give the same bytes.
    ///
    /// The generator is SplitMix64, written eight bytes at a time, so 64 MiB takes well under a
    /// second even in a debug build. The bytes do not compress, which keeps transfers honest.
    ///
    /// - Parameters:
    ///   - size: The number of bytes; zero or less gives an empty array.
    ///   - seed: The generator's starting state.
    /// - Returns: `size` bytes.
    public static func random(size: Int, seed: UInt64) -> [UInt8] {
        guard size > 0 else { return [] }
        var generator = SplitMix64(state: seed)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initializedCount in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            var offset = 0
            while offset + 8 <= size {
                raw.storeBytes(of: generator.next().littleEndian, toByteOffset: offset, as: UInt64.self)
                offset += 8
            }
            if offset < size {
                var last = generator.next().littleEndian
                withUnsafeBytes(of: &last) { lastBytes in
                    for index in offset..<size {
                        raw[index] = lastBytes[index - offset]
                    }
                }
            }
            initializedCount = size
        }
    }
}

/// The SplitMix64 generator (Steele, Lea and Flood), small and fast with good statistical quality.
struct SplitMix64 {
    var state: UInt64

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
