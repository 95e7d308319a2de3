import NIOCore
import NIOPosix

extension TestServer {
    /// The first handler of every connection: registers it for shutdown, and closes it abruptly.
    ///
    /// Sitting next to the socket lets ``abort(_:reset:)`` close from below the TLS handler, so a cut
    /// connection ends without `close_notify` and shutdown never waits on a TLS close handshake.
    final class ConnectionTracker: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = NIOAny

        private let store: Store

        init(store: Store) {
            self.store = store
        }

        func channelActive(context: ChannelHandlerContext) {
            if self.store.register(context.channel) {
                context.fireChannelActive()
            } else {
                context.close(promise: nil)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            self.store.unregister(context.channel)
            context.fireChannelInactive()
        }

        /// Closes `channel` at the socket, skipping TLS and HTTP handlers. Call on its event loop.
        ///
        /// - Parameters:
        ///   - channel: The connection.
        ///   - reset: Whether to set `SO_LINGER` to zero first so that the kernel sends a TCP RST.
        static func abort(_ channel: any Channel, reset: Bool) {
            channel.eventLoop.assertInEventLoop()
            let close = {
                if let context = try? channel.pipeline.syncOperations.context(handlerType: ConnectionTracker.self) {
                    context.close(promise: nil)
                } else {
                    channel.close(promise: nil)
                }
            }
            guard reset, let options = channel as? any SocketOptionProvider else {
                close()
                return
            }
            options.setSoLinger(linger(l_onoff: 1, l_linger: 0)).assumeIsolated().whenComplete { _ in close() }
        }
    }
}
