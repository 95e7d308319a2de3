/// A request the ``TestServer`` received, as it arrived.
public struct RecordedRequest: Sendable {
    /// The method, for example `GET` or `HEAD`.
    public var method: String
    /// The request target exactly as sent, query string included.
    public var uri: String
    /// The path of ``uri`` without query string or fragment; the key resources are matched by.
    public var path: String
    /// Every header field in the order received, names as sent.
    public var headers: [(name: String, value: String)]
    /// The server's number for the connection the request came on, counting from 0 in accept order.
    ///
    /// Equal numbers mean the client reused a connection (keep-alive).
    public var connectionID: Int
    /// The client's port on the connection the request came on (through a ``TestProxy``, the proxy's
    /// outgoing port: ``TestProxy/Tunnel/upstreamPort``).
    public var clientPort: Int?

    /// Returns the first value of a header field.
    ///
    /// - Parameter name: The field name, compared case-insensitively.
    /// - Returns: The first value sent for that field, or `nil` when it is absent.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return self.headers.first { $0.name.lowercased() == wanted }?.value
    }

    /// Returns the path part of a request target: no query string or fragment, no scheme or authority.
    static func path(ofURI uri: String) -> String {
        var target = Substring(uri)
        let lowercased = uri.lowercased()
        if !target.hasPrefix("/"), let scheme = ["http://", "https://"].first(where: { lowercased.hasPrefix($0) }) {
            // Absolute form (RFC 9112 §3.2.2): drop the scheme and authority.
            let afterScheme = target.dropFirst(scheme.count)
            target = afterScheme.firstIndex(of: "/").map { afterScheme[$0...] } ?? "/"
        }
        if let end = target.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            target = target[..<end]
        }
        return target.isEmpty ? "/" : String(target)
    }
}
