import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP server on loopback that answers the first bytes of each connection with fixed bytes, as
/// they are: for responses no HTTP library would write (a status line of `099`, say).
public final class RawReplyServer: Sendable {
    public let port: Int
    private let listener: any Channel
    private let accepted: NIOLockedValueBox<Int>

    /// How many connections were made to it.
    public var connections: Int { accepted.withLockedValue { $0 } }

    private init(port: Int, listener: any Channel, accepted: NIOLockedValueBox<Int>) {
        self.port = port
        self.listener = listener
        self.accepted = accepted
    }

    /// Starts a server on 127.0.0.1 (port 0) that writes `reply` once data arrives on a
    /// connection, then leaves the connection to the client.
    public static func start(reply: String) async throws -> RawReplyServer {
        let accepted = NIOLockedValueBox(0)
        let bytes = Array(reply.utf8)
        let listener = try await ServerBootstrap(group: TestServer.group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                accepted.withLockedValue { $0 += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Replier(reply: bytes))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = listener.localAddress?.port else {
            try? await listener.close()
            throw TestServerError(code: .bindFailed, message: "the listening socket has no port")
        }
        return RawReplyServer(port: port, listener: listener, accepted: accepted)
    }

    public func stop() {
        listener.close(promise: nil)
    }

    private final class Replier: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let reply: [UInt8]
        var replied = false

        init(reply: [UInt8]) { self.reply = reply }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !replied else { return }
            replied = true
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: reply)), promise: nil)
        }
    }
}
