import Hummingbird
import HummingbirdWebSocket
import NIOCore
import ServiceLifecycle
import SwoopRPC

/// `/jsonrpc` over HTTP POST and over a WebSocket: bytes in, ``Aria2RPC`` answers out (counted and
/// timed in ``DaemonMetrics``).
///
/// A refused token is answered after ``unauthorizedDelay``, as aria2 does, so that guessing the
/// secret is slow; the wait is a timer, not a busy loop.
struct JSONRPCEndpoint: Sendable {
    static let unauthorizedDelay = Duration.seconds(1)

    let rpc: Aria2RPC
    let hub: NotificationHub
    let maxMessageBytes: Int
    let metrics: DaemonMetrics

    /// The answer to a request body: one JSON response (with aria2's HTTP status for it) or a
    /// batch's array (200).
    func answer(_ body: some Collection<UInt8>) async -> (status: Int, json: [UInt8]) {
        let started = ContinuousClock.now
        let request = RPCRequest.parse(body)
        let attempt = Aria2RPC.Attempt()
        let responses = await rpc.answer(request, attempt: attempt)
        metrics.recordCall(methods: request.methods, duration: ContinuousClock.now - started)
        // Any refused token, in a batch or a multicall too.
        if attempt.wasRefused {
            try? await Task.sleep(for: Self.unauthorizedDelay)
        }
        switch request {
        case .single:
            let response = responses[0]
            return (response.httpStatus, response.json.serialized())
        case .batch:
            return (200, JSONValue.array(responses.map(\.json)).serialized())
        }
    }

    func post(_ request: Request, _ context: some RequestContext) async throws -> Response {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: maxMessageBytes)
        } catch is NIOTooManyBytesError {
            // A chunked body over the cap (one with a Content-Length was refused unread).
            var headers = HTTPFields()
            headers[.connection] = "close"
            headers[.contentType] = "text/plain; charset=utf-8"
            return Response(status: .contentTooLarge, headers: headers, body: .init(byteBuffer: ByteBuffer(string: "the request body is over \(maxMessageBytes) bytes\n")))
        }
        let (status, json) = await answer(body.readableBytesView)
        var headers = HTTPFields()
        headers[.contentType] = "application/json-rpc"
        return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: json)))
    }

    /// A WebSocket session: calls answered in order, notifications sent as they come. It ends when
    /// the client closes, or when the daemon shuts down.
    func session(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let (number, notifications) = hub.open()
        defer { hub.close(number) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await text in notifications { try await outbound.write(.text(text)) }
            }
            defer { group.cancelAll() }
            try await cancelWhenGracefulShutdown {
                for try await message in inbound.messages(maxSize: maxMessageBytes) {
                    guard case .text(let text) = message else { continue }
                    let (_, json) = await answer(text.utf8)
                    try await outbound.write(.text(String(decoding: json, as: UTF8.self)))
                }
            }
        }
    }
}

extension RPCRequest {
    /// The methods of its calls, in order ("unknown" for a call that could not be read).
    var methods: [String] {
        switch self {
        case .single(let call): [(try? call.get())?.method ?? "unknown"]
        case .batch(let calls): calls.map { (try? $0.get())?.method ?? "unknown" }
        }
    }
}
