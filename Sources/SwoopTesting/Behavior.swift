/// How the ``TestServer`` answers one request: normally, or with a scripted fault.
///
/// Behaviours are given per path, either queued with ``TestServer/enqueue(_:_:)`` (one-shot, one per
/// request, in order) or as a standing default with ``TestServer/setDefault(_:_:)``. They apply to
/// every method, `HEAD` included. Body-related behaviours send no body bytes to a `HEAD` request,
/// so `cutAfter` closes right after the head and `stallAfter` stalls right after it.
public enum Behavior: Sendable {
    /// Answers from the path's ``Resource`` as usual (404 when there is none).
    case normal
    /// Sends the normal head, then only `bytes` body bytes, then closes the connection.
    ///
    /// With `reset`, `SO_LINGER` is set to zero first so the close sends a TCP RST, which may also
    /// discard body bytes still in the kernel's send buffer. Over TLS no `close_notify` is sent.
    case cutAfter(bytes: Int, reset: Bool = false)
    /// Sends the normal head and `bytes` body bytes, then nothing more.
    ///
    /// The connection stays open until the client closes it or ``TestServer/shutdown()`` runs.
    case stallAfter(bytes: Int)
    /// Answers a `Range` request with `200` and the whole body, as a server without range support.
    case ignoreRange
    /// Serves a `Range` whatever its `If-Range` says, as h2o and S3 over TLS were seen to: the
    /// client alone must tell whether the range continues its file.
    case ignoreIfRange
    /// Answers `206` whose `Content-Range` claims this first byte; the body still starts at the
    /// requested one (or at byte 0 without a `Range` header), and the claimed length is the real one.
    case wrongContentRangeStart(Int)
    /// Answers `206` whose `Content-Range` claims this complete length; the body is the requested
    /// range (or the whole body without a `Range` header).
    case wrongContentRangeTotal(Int)
    /// Claims this `Content-Length`, sends the real body, then closes (`Connection: close`).
    case contentLengthOverride(Int)
    /// Answers with this status, these headers and this body instead of the resource.
    ///
    /// For example `.status(503, headers: [("Retry-After", "1")], body: "busy")`. Needs no resource.
    case status(Int, headers: [(String, String)] = [], body: String = "")
    /// Answers with a redirect to `location`, sent verbatim. Needs no resource.
    case redirect(status: Int = 302, location: String)
    /// Answers normally plus one `X-Huge` header whose value is this many bytes long.
    case hugeHeaders(bytes: Int)
    /// Sends the body in small pieces paced to about this many bytes per second.
    ///
    /// Pacing uses event-loop scheduled tasks; the server never blocks a thread.
    case throttle(bytesPerSecond: Int)
    /// Replaces the path's resource with this one first, then answers normally.
    ///
    /// Models a file that changed on the server between requests; the replacement stays in place.
    case replaceResource(Resource)
}
