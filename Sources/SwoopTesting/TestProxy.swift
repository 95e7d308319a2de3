import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// An in-process proxy for tests on 127.0.0.1: HTTP `CONNECT` and SOCKS5 (`CONNECT`, no
/// authentication) on the same port, told apart by the first byte. Once a tunnel is open it relays
/// bytes both ways; it never looks inside, so HTTPS works through it unchanged.
///
/// Plain-HTTP absolute-form forwarding (`GET http://host/path`) is not offered: AsyncHTTPClient
/// tunnels `http` URLs with `CONNECT` too, and any other request gets a 405.
///
/// ```swift
/// let proxy = try await TestProxy.start(credentials: ("user", "secret"))
/// // ... run the client with --proxy http://user:secret@127.0.0.1:\(proxy.port) ...
/// #expect(proxy.tunnels.map(\.port) == [server.port])
/// try await proxy.shutdown()
/// ```
public final class TestProxy: Sendable {
    /// One tunnel the proxy was asked for, whether or not it opened it.
    public struct Tunnel: Sendable {
        /// How the tunnel was asked for.
        public enum Kind: String, Sendable {
            /// An HTTP `CONNECT` request.
            case httpConnect
            /// A SOCKS5 `CONNECT` command.
            case socks5
        }

        /// How the tunnel was asked for.
        public var kind: Kind
        /// The target host as the client sent it: a name or an address.
        public var host: String
        /// The target port.
        public var port: Int
        /// The `Proxy-Authorization` of the `CONNECT` request (`nil` for SOCKS or when absent).
        public var proxyAuthorization: String?
        /// The header fields of the `CONNECT` request, in order (empty for SOCKS).
        public var headers: [(name: String, value: String)]
        /// Whether the proxy opened the tunnel (not refused with 407 and the target reachable).
        public var accepted: Bool
        /// The local port of the proxy's connection to the target, which the target sees as the
        /// client's port (``RecordedRequest/clientPort``).
        public var upstreamPort: Int?
    }

    /// The port the proxy listens on, on 127.0.0.1.
    public let port: Int
    /// `http://127.0.0.1:PORT`: the proxy as an HTTP proxy URL (no credentials).
    public var httpURL: String { "http://127.0.0.1:\(port)" }
    /// `socks5://127.0.0.1:PORT`: the proxy as a SOCKS5 proxy URL.
    public var socksURL: String { "socks5://127.0.0.1:\(port)" }

    private let group: MultiThreadedEventLoopGroup
    private let listener: any Channel
    private let state: NIOLockedValueBox<State>

    struct State {
        var tunnels: [Tunnel] = []
        var channels: [ObjectIdentifier: any Channel] = [:]
        var isShutDown = false
    }

    private init(group: MultiThreadedEventLoopGroup, listener: any Channel, state: NIOLockedValueBox<State>, port: Int) {
        self.group = group
        self.listener = listener
        self.state = state
        self.port = port
    }

    deinit {
        if !self.state.withLockedValue({ $0.isShutDown }) {
            self.group.shutdownGracefully { _ in }
        }
    }

    /// Starts a proxy on 127.0.0.1 on a free port.
    ///
    /// - Parameter credentials: When set, an HTTP `CONNECT` must carry them as Basic
    ///   `Proxy-Authorization` or gets a 407, and SOCKS5 clients are refused (no acceptable method).
    /// - Returns: The running proxy; call ``shutdown()`` when done.
    /// - Throws: When the socket cannot be bound.
    public static func start(credentials: (username: String, password: String)? = nil) async throws -> TestProxy {
        let expected = credentials.map { "Basic " + Data("\($0.username):\($0.password)".utf8).base64EncodedString() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let state = NIOLockedValueBox(State())
        do {
            let listener = try await ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        guard Self.register(channel, in: state) else { throw ChannelError.ioOnClosedChannel }
                        try channel.pipeline.syncOperations.addHandler(FrontHandler(state: state, expectedAuthorization: expected))
                    }
                }
                .bind(host: "127.0.0.1", port: 0)
                .get()
            guard let port = listener.localAddress?.port else {
                try? await listener.close()
                throw TestServerError(code: .bindFailed, message: "the proxy's listening socket has no port")
            }
            return TestProxy(group: group, listener: listener, state: state, port: port)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// Every tunnel asked for so far, in order.
    public var tunnels: [Tunnel] {
        self.state.withLockedValue { $0.tunnels }
    }

    /// Stops listening, closes every connection (both sides of every tunnel) and stops the event loop.
    /// Calling it again returns at once.
    ///
    /// - Throws: When the event loop group fails to shut down.
    public func shutdown() async throws {
        let channels: [any Channel]? = self.state.withLockedValue { state in
            guard !state.isShutDown else { return nil }
            state.isShutDown = true
            defer { state.channels = [:] }
            return Array(state.channels.values)
        }
        guard let channels else { return }
        try? await self.listener.close()
        for channel in channels {
            channel.close(promise: nil)
        }
        try await self.group.shutdownGracefully()
    }

    /// Tracks a connection for shutdown; `false` once shutdown has begun.
    static func register(_ channel: any Channel, in state: NIOLockedValueBox<State>) -> Bool {
        let registered = state.withLockedValue { state in
            guard !state.isShutDown else { return false }
            state.channels[ObjectIdentifier(channel)] = channel
            return true
        }
        if registered {
            channel.closeFuture.whenComplete { _ in
                _ = state.withLockedValue { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
            }
        }
        return registered
    }
}

extension TestProxy {
    /// The client side: reads the handshake (HTTP `CONNECT` or SOCKS5), opens the connection to the
    /// target on the same event loop, then relays.
    final class FrontHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private enum Phase {
            /// Reading an HTTP request head or a SOCKS5 greeting.
            case start
            /// SOCKS5 greeting answered; reading the request.
            case socksRequest
            /// Connecting to the target; bytes that arrive meanwhile wait in `buffer`.
            case connecting
            /// Tunnel open.
            case relaying(any Channel)
            case closed
        }

        private let state: NIOLockedValueBox<State>
        private let expectedAuthorization: String?
        private var phase = Phase.start
        private var buffer = ByteBuffer()

        init(state: NIOLockedValueBox<State>, expectedAuthorization: String?) {
            self.state = state
            self.expectedAuthorization = expectedAuthorization
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = self.unwrapInboundIn(data)
            if case .relaying(let peer) = self.phase {
                peer.writeAndFlush(bytes, promise: nil)
                return
            }
            self.buffer.writeBuffer(&bytes)
            self.advance(context: context)
        }

        func channelInactive(context: ChannelHandlerContext) {
            if case .relaying(let peer) = self.phase {
                peer.close(promise: nil)
            }
            self.phase = .closed
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }

        private func advance(context: ChannelHandlerContext) {
            switch self.phase {
            case .start:
                guard let first = self.buffer.getInteger(at: self.buffer.readerIndex, as: UInt8.self) else { return }
                if first == 5 { self.readSOCKSGreeting(context: context) } else { self.readConnect(context: context) }
            case .socksRequest:
                self.readSOCKSRequest(context: context)
            case .connecting, .relaying, .closed:
                break
            }
        }

        // MARK: HTTP CONNECT

        private func readConnect(context: ChannelHandlerContext) {
            let text = String(buffer: self.buffer)
            guard let end = text.range(of: "\r\n\r\n") else {
                if self.buffer.readableBytes > 64 * 1024 { self.reply("HTTP/1.1 431 Request Header Fields Too Large", context: context) }
                return
            }
            self.buffer.moveReaderIndex(forwardBy: text[..<end.upperBound].utf8.count)
            let lines = text[..<end.lowerBound].components(separatedBy: "\r\n")
            let requestLine = lines[0].split(separator: " ")
            var headers: [(name: String, value: String)] = []
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
            guard requestLine.count == 3, requestLine[0] == "CONNECT", let (host, port) = Self.authority(requestLine[1]) else {
                self.reply("HTTP/1.1 405 Method Not Allowed", context: context)
                return
            }
            let authorization = headers.first { $0.name.lowercased() == "proxy-authorization" }?.value
            var tunnel = Tunnel(
                kind: .httpConnect, host: host, port: port, proxyAuthorization: authorization, headers: headers, accepted: false
            )
            if let expected = self.expectedAuthorization, authorization != expected {
                self.record(tunnel)
                self.reply("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"", context: context)
                return
            }
            self.open(host: host, port: port, context: context) { outcome, context in
                tunnel.accepted = outcome != nil
                tunnel.upstreamPort = outcome
                self.record(tunnel)
                guard outcome != nil else {
                    self.reply("HTTP/1.1 502 Bad Gateway", context: context)
                    return
                }
                // As AsyncHTTPClient's own test proxy does; RFC 9110 lets the client ignore it.
                context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 200 Connection Established\r\nContent-Length: 0\r\n\r\n")), promise: nil)
            }
        }

        /// Writes a bodiless response and closes.
        private func reply(_ statusAndHeaders: String, context: ChannelHandlerContext) {
            self.phase = .closed
            let bytes = ByteBuffer(string: statusAndHeaders + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            context.writeAndFlush(self.wrapOutboundOut(bytes)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }

        /// `host:port` or `[v6]:port`.
        private static func authority(_ text: Substring) -> (String, Int)? {
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else { return nil }
            var host = text[..<colon]
            if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
            return host.isEmpty ? nil : (String(host), port)
        }

        // MARK: SOCKS5

        private func readSOCKSGreeting(context: ChannelHandlerContext) {
            guard let count = self.buffer.getInteger(at: self.buffer.readerIndex + 1, as: UInt8.self),
                let methods = self.buffer.getBytes(at: self.buffer.readerIndex + 2, length: Int(count))
            else { return }
            self.buffer.moveReaderIndex(forwardBy: 2 + Int(count))
            guard self.expectedAuthorization == nil, methods.contains(0) else {
                self.record(Tunnel(kind: .socks5, host: "", port: 0, headers: [], accepted: false))
                self.phase = .closed
                context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: [5, 0xFF]))).assumeIsolated().whenComplete { _ in
                    context.close(promise: nil)
                }
                return
            }
            self.phase = .socksRequest
            context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: [5, 0])), promise: nil)
            self.advance(context: context)
        }

        private func readSOCKSRequest(context: ChannelHandlerContext) {
            let start = self.buffer.readerIndex
            guard let head = self.buffer.getBytes(at: start, length: 4) else { return }
            let host: String
            var length = 4
            switch head[3] {
            case 1:
                guard let address = self.buffer.getBytes(at: start + 4, length: 4) else { return }
                host = address.map(String.init).joined(separator: ".")
                length += 4
            case 3:
                guard let count = self.buffer.getInteger(at: start + 4, as: UInt8.self),
                    let name = self.buffer.getString(at: start + 5, length: Int(count))
                else { return }
                host = name
                length += 1 + Int(count)
            case 4:
                guard let address = self.buffer.getBytes(at: start + 4, length: 16) else { return }
                host = stride(from: 0, to: 16, by: 2).map { String(UInt16(address[$0]) << 8 | UInt16(address[$0 + 1]), radix: 16) }
                    .joined(separator: ":")
                length += 16
            default:
                self.socksFail(code: 8, context: context)  // address type not supported
                return
            }
            guard let port = self.buffer.getInteger(at: start + length, as: UInt16.self) else { return }
            self.buffer.moveReaderIndex(forwardBy: length + 2)
            var tunnel = Tunnel(kind: .socks5, host: host, port: Int(port), headers: [], accepted: false)
            guard head[0] == 5, head[1] == 1 else {
                self.record(tunnel)
                self.socksFail(code: 7, context: context)  // command not supported
                return
            }
            self.open(host: host, port: Int(port), context: context) { outcome, context in
                tunnel.accepted = outcome != nil
                tunnel.upstreamPort = outcome
                self.record(tunnel)
                guard outcome != nil else {
                    self.socksFail(code: 5, context: context)  // connection refused
                    return
                }
                context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: [5, 0, 0, 1, 0, 0, 0, 0, 0, 0])), promise: nil)
            }
        }

        private func socksFail(code: UInt8, context: ChannelHandlerContext) {
            self.phase = .closed
            context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: [5, code, 0, 1, 0, 0, 0, 0, 0, 0]))).assumeIsolated()
                .whenComplete { _ in context.close(promise: nil) }
        }

        // MARK: Relaying

        /// Connects to the target on this event loop, then calls `done` with the local port (or
        /// `nil` on failure) before any relayed byte moves.
        private func open(
            host: String, port: Int, context: ChannelHandlerContext, done: @escaping (Int?, ChannelHandlerContext) -> Void
        ) {
            self.phase = .connecting
            let front = context.channel
            let state = self.state
            ClientBootstrap(group: context.eventLoop)
                .connectTimeout(.seconds(5))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        guard TestProxy.register(channel, in: state) else { throw ChannelError.ioOnClosedChannel }
                        try channel.pipeline.syncOperations.addHandler(BackHandler(peer: front))
                    }
                }
                .connect(host: host, port: port)
                .assumeIsolated()
                .whenComplete { result in
                    guard case .connecting = self.phase else {
                        // The client went away meanwhile.
                        if case .success(let back) = result { back.close(promise: nil) }
                        return
                    }
                    switch result {
                    case .success(let back):
                        self.phase = .relaying(back)
                        done(back.localAddress?.port, context)
                        if self.buffer.readableBytes > 0 {
                            back.writeAndFlush(self.buffer, promise: nil)
                            self.buffer.clear()
                        }
                    case .failure:
                        done(nil, context)
                    }
                }
        }

        private func record(_ tunnel: Tunnel) {
            self.state.withLockedValue { $0.tunnels.append(tunnel) }
        }
    }

    /// The target side of a tunnel: everything read goes to the client; either side closing closes both.
    final class BackHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer

        private let peer: any Channel

        init(peer: any Channel) {
            self.peer = peer
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            self.peer.writeAndFlush(self.unwrapInboundIn(data), promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            self.peer.close(promise: nil)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
