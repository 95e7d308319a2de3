import HTTPTypes
import Hummingbird
import NIOCore

/// The web page's files (`Sources/SwoopDaemon/Web`, embedded in the binary) and the headers every
/// answer of the page carries: a strict Content-Security-Policy (scripts, styles and connections
/// from the daemon itself only; no inline script, no framing), no MIME sniffing, no referrer.
enum WebPage {
    struct File: Sendable {
        let bytes: [UInt8]
        let contentType: String
    }

    static let files: [String: File] = [
        "/": File(bytes: PackageResources.index_html, contentType: "text/html; charset=utf-8"),
        "/ui/style.css": File(bytes: PackageResources.style_css, contentType: "text/css; charset=utf-8"),
        "/ui/app.js": File(bytes: PackageResources.app_js, contentType: "text/javascript; charset=utf-8"),
        "/ui/format.js": File(bytes: PackageResources.format_js, contentType: "text/javascript; charset=utf-8"),
        "/ui/model.js": File(bytes: PackageResources.model_js, contentType: "text/javascript; charset=utf-8"),
        "/ui/rpc.js": File(bytes: PackageResources.rpc_js, contentType: "text/javascript; charset=utf-8"),
        "/ui/listview.js": File(bytes: PackageResources.listview_js, contentType: "text/javascript; charset=utf-8"),
        "/ui/details.js": File(bytes: PackageResources.details_js, contentType: "text/javascript; charset=utf-8"),
        "/ui/icon.svg": File(bytes: PackageResources.icon_svg, contentType: "image/svg+xml"),
    ]

    static let contentSecurityPolicy = [
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "img-src 'self'",
        "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
    ].joined(separator: "; ")

    /// The headers of every answer of the page, its type aside.
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy: contentSecurityPolicy,
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        // No other window keeps a hold on the page's (it could change its address, and its token).
        HTTPField.Name("Cross-Origin-Opener-Policy")!: "same-origin",
        // A new daemon version serves a new page: the browser asks again (ETag-less, it is small).
        .cacheControl: "no-cache",
    ]

    static var plainHeaders: HTTPFields {
        var headers = securityHeaders
        headers[.contentType] = "text/plain; charset=utf-8"
        return headers
    }

    /// A plain-text answer with the page's headers.
    static func plain(_ status: HTTPResponse.Status, _ text: String, headers extra: HTTPFields = [:]) -> Response {
        var headers = plainHeaders
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The file at `path`, or 404.
    static func response(for path: String) -> Response {
        guard let file = files[path] else { return plain(.notFound, "not found: \(path)\n") }
        var headers = securityHeaders
        headers[.contentType] = file.contentType
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: file.bytes)))
    }
}
