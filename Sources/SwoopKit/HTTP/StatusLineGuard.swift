import NIOCore
import NIOHTTP1

/// Stops an HTTP/1.1 response whose status is below 100 before AsyncHTTPClient sees it.
///
/// AsyncHTTPClient takes a response head below 200 for an informational one and waits for the
/// next head; the body that follows a status such as `099` then traps in its request state machine
/// (the process ends with exit 132), so any server could stop Swoop, and a daemon with such a
/// download queued stopped again at every start. Between the response decoder and
/// AsyncHTTPClient's handler, this fails the request with ``InvalidStatus`` and closes the
/// connection instead. (HTTP/1.1 only: HTTP/2, off by default, is not guarded.)
final class StatusLineGuard: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    /// The status of a response that HTTP has no meaning for.
    struct InvalidStatus: Error {
        var code: Int
    }

    /// A response was refused: whatever else arrives on the connection is dropped.
    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        if case .head(let head) = unwrapInboundIn(data), head.status.code < 100 {
            refused = true
            context.fireErrorCaught(InvalidStatus(code: Int(head.status.code)))
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    /// Puts a guard after the HTTP/1.1 response decoder of `channel`'s pipeline (on its event loop).
    static func install(on channel: any Channel) throws {
        let pipeline = channel.pipeline.syncOperations
        let decoder = try pipeline.context(handlerType: ByteToMessageHandler<HTTPResponseDecoder>.self)
        try pipeline.addHandler(StatusLineGuard(), position: .after(decoder.handler))
    }
}
