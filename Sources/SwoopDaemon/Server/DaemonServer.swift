import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import SwoopRPC

/// The daemon's HTTP server, behind ``GuardHandler``: `/jsonrpc` (POST and WebSocket), the web
/// page (`/` and `/ui/…`, ``WebPage``), finished files for signed links (`/files/…`,
/// ``FileServing``), `/metrics` (``DaemonMetrics``, with the secret) and `/healthz`, nothing else. No method calls over GET, no JSONP.
struct DaemonServer {
    struct Options: Sendable {
        var listen: ListenAddress
        var allowHosts: [String] = []
        var allowOrigins: [String] = []
        var maxConnections = 64
        var limits = GuardHandler.Limits()
        /// A WebSocket session idle this long is closed after a ping goes unanswered.
        var pingInterval = Duration.seconds(30)
    }

    /// The application; `onRunning` is given the address it is bound to (the port chosen for 0).
    static func make(
        options: Options, rpc: Aria2RPC, hub: NotificationHub, metrics: DaemonMetrics, logger: Logger,
        onRunning: @escaping @Sendable (ListenAddress) async -> Void
    ) -> some ApplicationProtocol {
        let rules = NIOLockedValueBox(RequestGuard(listen: options.listen, allowHosts: options.allowHosts, allowOrigins: options.allowOrigins))
        let endpoint = JSONRPCEndpoint(rpc: rpc, hub: hub, maxMessageBytes: options.limits.maxBodyBytes, metrics: metrics)

        let router = Router()
        router.post("/jsonrpc") { request, context in
            var response = try await endpoint.post(request, context)
            allowOrigin(of: request, in: &response.headers)
            return response
        }
        router.on("/jsonrpc", method: .options) { request, _ -> Response in
            // A browser's preflight for a POST with a JSON Content-Type from an allowed origin.
            var headers: HTTPFields = [.accessControlAllowMethods: "POST", .accessControlAllowHeaders: "Content-Type", .accessControlMaxAge: "600"]
            allowOrigin(of: request, in: &headers)
            return Response(status: .noContent, headers: headers)
        }
        router.get("/jsonrpc") { _, _ -> Response in
            Response(status: .methodNotAllowed, headers: [.contentType: "text/plain; charset=utf-8", .allow: "POST"],
                     body: .init(byteBuffer: ByteBuffer(string: "JSON-RPC calls are POSTed (or sent over a WebSocket)\n")))
        }
        router.get("/") { _, _ in WebPage.response(for: "/") }
        router.get("/ui/:file") { request, _ in WebPage.response(for: request.uri.path) }
        router.get("/files/:id/:name") { request, context in
            await FileServing.response(request, id: context.parameters.get("id") ?? "", rpc: rpc)
        }
        router.get("/metrics") { request, _ -> Response in
            // Prometheus sends the secret as a bearer token (`authorization: {credentials: …}`).
            let given = request.headers[.authorization].flatMap { $0.lowercased().hasPrefix("bearer ") ? String($0.dropFirst(7)) : nil }
            guard let given, rpc.isSecret(given) else {
                // As slow to refuse as a JSON-RPC call with a wrong token: one guess a second.
                try? await Task.sleep(for: JSONRPCEndpoint.unauthorizedDelay)
                return WebPage.plain(.unauthorized, "send the RPC secret as Authorization: Bearer SECRET\n", headers: [.wwwAuthenticate: "Bearer"])
            }
            var headers = WebPage.plainHeaders
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: await metrics.render(manager: rpc.manager))))
        }
        router.get("/healthz") { _, _ -> Response in
            // For a load balancer or a supervisor: up or not, nothing more (no token, no details).
            WebPage.plain(.ok, "ok\n")
        }
        let webSocketRouter = Router(context: BasicWebSocketRequestContext.self)
        webSocketRouter.ws("/jsonrpc") { _, _ in
            .upgrade([:])
        } onUpgrade: { inbound, outbound, _ in
            try await endpoint.session(inbound: inbound, outbound: outbound)
        }
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(idleTimeout: .seconds(60)),
            ws: .init(maxFrameSize: options.limits.maxBodyBytes, autoPing: .enabled(timePeriod: options.pingInterval), closeTimeout: .seconds(5))
        )
        let webSocketResponder = webSocketRouter.buildResponder()
        let limits = options.limits
        let server = HTTPServerBuilder { responder in
            GuardedChannel(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: configuration),
                rules: { rules.withLockedValue { $0 } }, limits: limits
            )
        }
        let listen = options.listen
        let allowHosts = options.allowHosts, allowOrigins = options.allowOrigins
        return Application(
            router: router,
            server: server,
            configuration: .init(
                address: .hostname(listen.host, port: listen.port), serverName: nil,
                availableConnectionsDelegate: MaximumAvailableConnections(options.maxConnections)
            ),
            onServerRunning: { channel in
                let bound = ListenAddress(host: listen.host, port: channel.localAddress?.port ?? listen.port)
                rules.withLockedValue { $0 = RequestGuard(listen: bound, allowHosts: allowHosts, allowOrigins: allowOrigins) }
                await onRunning(bound)
            },
            logger: logger
        )
    }

    /// Lets a page of the request's origin read the answer: one given with --allow-origin, since
    /// the guard let the request through.
    private static func allowOrigin(of request: Request, in headers: inout HTTPFields) {
        guard let origin = request.headers[.origin] else { return }
        headers[.accessControlAllowOrigin] = origin
        headers[.vary] = "Origin"
    }
}

