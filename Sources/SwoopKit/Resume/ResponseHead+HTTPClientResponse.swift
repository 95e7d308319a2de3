import AsyncHTTPClient

extension ResponseHead {
    /// The parts of a response's head that resume decisions look at.
    init(_ response: HTTPClientResponse) {
        self.init(
            status: Int(response.status.code), etag: response.headers.first(name: "ETag"),
            lastModified: response.headers.first(name: "Last-Modified"),
            contentLength: response.headers.first(name: "Content-Length").flatMap { Int($0) },
            contentRange: response.headers.first(name: "Content-Range")
        )
    }
}
