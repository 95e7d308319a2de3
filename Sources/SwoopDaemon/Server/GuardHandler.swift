import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// The daemon's first look at every request, right after NIO's HTTP decoder: it sees the head of
/// every request (a WebSocket upgrade request too, before the upgrade) and refuses it, without
/// reading its body, when ``RequestGuard`` says no or its `Content-Length` is over the cap; then it
/// closes the connection. It also keeps slow clients from holding a connection: a request head must
/// be complete within `headTimeout` of the connection (or of the previous answer), a body within
/// `bodyTimeout` of its head. After a WebSocket upgrade it steps aside.
final class GuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    struct Limits: Sendable {
        var maxBodyBytes = 1 << 20
        var headTimeout = TimeAmount.seconds(10)
        var bodyTimeout = TimeAmount.seconds(30)
    }

    private let rules: RequestGuard
    private let limits: Limits
    private var refusing = false
    private var closeAfterResponse = false
    /// When the connection is closed unless what it waits for came; `nil` while nothing is due.
    private var deadline: NIODeadline?
    /// The one timer, moved on lazily: arming does not reschedule it for every request, it fires
    /// at its time and sleeps again until the deadline of the moment.
    private var timer: Scheduled<Void>?
    private var timerFires: NIODeadline?

    init(rules: RequestGuard, limits: Limits) {
        self.rules = rules
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) { arm(context, limits.headTimeout) }
    func handlerRemoved(context: ChannelHandlerContext) {
        deadline = nil
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refusing { return }
        guard case .head(let head) = unwrapInboundIn(data) else {
            if case .end = unwrapInboundIn(data) { disarm() }
            context.fireChannelRead(data)
            return
        }
        arm(context, limits.bodyTimeout)
        if let (status, reason) = refusal(head) {
            refusing = true
            refuse(context: context, status: status, reason: reason)
            return
        }
        context.fireChannelRead(data)
        // After a WebSocket upgrade request the connection stops speaking HTTP.
        if head.headers["upgrade"].contains(where: { $0.lowercased() == "websocket" }) {
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    private func refusal(_ head: HTTPRequestHead) -> (HTTPResponseStatus, String)? {
        if let reason = rules.refusal(host: head.headers["host"].first, origin: head.headers["origin"].first) {
            return (.forbidden, reason)
        }
        if let length = head.headers["content-length"].first.flatMap(Int.init), length > limits.maxBodyBytes {
            return (.payloadTooLarge, "the request body is \(length) bytes; the most is \(limits.maxBodyBytes)")
        }
        return nil
    }

    private func refuse(context: ChannelHandlerContext, status: HTTPResponseStatus, reason: String) {
        let body = context.channel.allocator.buffer(string: reason + "\n")
        let headers = HTTPHeaders([
            ("content-type", "text/plain; charset=utf-8"), ("content-length", String(body.readableBytes)), ("connection", "close"),
        ])
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            // Hummingbird would keep the connection and drain a body it did not read: close instead.
            if head.headers["connection"].contains(where: { $0.lowercased() == "close" }) { closeAfterResponse = true }
            context.write(data, promise: promise)
        case .end where closeAfterResponse:
            context.writeAndFlush(data).assumeIsolated().whenComplete { result in
                promise?.completeWith(result)
                context.close(promise: nil)
            }
        case .end:
            // Keep-alive: the next request head must come in time.
            arm(context, limits.headTimeout)
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        }
    }

    private func arm(_ context: ChannelHandlerContext, _ amount: TimeAmount) {
        let due = NIODeadline.now() + amount
        deadline = due
        // A timer that fires later than the new deadline is brought forward; an earlier one wakes
        // and waits on.
        if let fires = timerFires, fires <= due { return }
        schedule(context, at: due)
    }

    private func schedule(_ context: ChannelHandlerContext, at time: NIODeadline) {
        timer?.cancel()
        timerFires = time
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: time) { [self] in
            timerFires = nil
            timer = nil
            guard let deadline else { return }
            if deadline <= NIODeadline.now() {
                context.close(promise: nil)
            } else {
                schedule(context, at: deadline)
            }
        }
    }

    private func disarm() {
        deadline = nil
    }
}

/// A Hummingbird child channel with ``GuardHandler`` right after NIO's HTTP request decoder.
struct GuardedChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    /// The rules of the moment (they name the port, known once the server is bound).
    let rules: @Sendable () -> RequestGuard
    let limits: GuardHandler.Limits

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let operations = channel.pipeline.syncOperations
            let decoder = try operations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try operations.addHandler(GuardHandler(rules: rules(), limits: limits), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
