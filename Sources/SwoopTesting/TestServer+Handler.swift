import NIOCore
import NIOHTTP1

extension TestServer {
    /// Answers the requests of one connection, one at a time, as the store's script says.
    ///
    /// Bodies go out in slices, each written only while the channel is writable and counted when
    /// its write completes, so large bodies never sit in memory twice and the byte count is honest.
    /// `HTTPServerPipelineHandler` (added before this handler) holds back pipelined requests until
    /// the previous response has ended.
    final class Handler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        /// A response whose body is being written.
        private struct Transfer {
            var plan: ResponsePlan
            /// The request path the body bytes are counted against.
            var path: String
            /// The next byte of `plan.body` to write.
            var offset: Int
            /// The most recent write; writes complete in order, so this one completes last.
            var lastWrite: EventLoopFuture<Void>
            /// The scheduled next piece of a throttled body.
            var pacingTimer: Scheduled<Void>?
        }

        private enum State {
            /// Waiting for a request.
            case idle
            /// Writing a response body.
            case sending(Transfer)
            /// The connection will not answer again: it is closing, cut or stalled.
            case finished
        }

        /// The largest body slice handed to the channel at once.
        private static let sliceSize = 64 * 1024

        private let store: Store
        private let connectionID: Int
        private var requestHead: HTTPRequestHead?
        private var state = State.idle
        /// Set while `pump` runs, so that calls from inside its writes do not recurse.
        private var isPumping = false
        /// The number of the response being answered, for the in-flight count.
        private var openResponse: Int?

        init(store: Store, connectionID: Int) {
            self.store = store
            self.connectionID = connectionID
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch self.unwrapInboundIn(data) {
            case .head(let head):
                self.requestHead = head
            case .body:
                break
            case .end:
                guard let head = self.requestHead, case .idle = self.state else { return }
                self.requestHead = nil
                self.respond(to: head, context: context)
            }
        }

        func channelWritabilityChanged(context: ChannelHandlerContext) {
            if context.channel.isWritable {
                self.pump(context: context)
            }
            context.fireChannelWritabilityChanged()
        }

        func channelInactive(context: ChannelHandlerContext) {
            self.stopAnswering()
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // Parse errors are answered by HTTPServerProtocolErrorHandler; anything reaching here
            // (a reset by the peer, a failed TLS handshake) leaves the connection unusable.
            self.stopAnswering()
            context.close(promise: nil)
        }

        private func stopAnswering() {
            if case .sending(let transfer) = self.state {
                transfer.pacingTimer?.cancel()
            }
            self.state = .finished
            self.endResponse()
        }

        private func endResponse() {
            if let number = self.openResponse {
                self.openResponse = nil
                self.store.endResponse(number)
            }
        }

        private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
            let request = RecordedRequest(
                method: head.method.rawValue,
                uri: head.uri,
                path: RecordedRequest.path(ofURI: head.uri),
                headers: head.headers.map { (name: $0.name, value: $0.value) },
                connectionID: self.connectionID,
                clientPort: context.channel.remoteAddress?.port
            )
            let (resource, behavior) = self.store.receive(request)
            self.openResponse = self.store.beginResponse()
            let plan = ResponsePlan.make(for: head, resource: resource, behavior: behavior)
            let responseHead = HTTPResponseHead(version: head.version, status: plan.status, headers: plan.headers)
            let headWritten = context.eventLoop.makePromise(of: Void.self)
            // Enter `.sending` before writing: the write may close the channel from inside.
            let transfer = Transfer(
                plan: plan,
                path: request.path,
                offset: plan.bodyRange.lowerBound,
                lastWrite: headWritten.futureResult
            )
            self.state = .sending(transfer)
            context.writeAndFlush(self.wrapOutboundOut(.head(responseHead)), promise: headWritten)
            self.pump(context: context)
        }

        /// Writes body slices while the channel is writable (one paced piece when throttled), and
        /// finishes the response once every planned byte has been handed over.
        ///
        /// Writes can call back into this handler before they return: a flush that drains the
        /// channel fires `channelWritabilityChanged`, and writing `.end` may deliver the next
        /// pipelined request. So `state` is brought up to date before every write, the loop
        /// re-reads it after every write, and a nested call returns at once (the outer loop
        /// carries on) instead of recursing once per slice.
        private func pump(context: ChannelHandlerContext) {
            guard !self.isPumping else { return }
            self.isPumping = true
            defer { self.isPumping = false }

            while case .sending(var transfer) = self.state, transfer.pacingTimer == nil {
                let end = transfer.plan.bodyRange.upperBound
                guard transfer.offset < end else {
                    self.finish(transfer, context: context)
                    continue
                }
                guard context.channel.isWritable else { return }

                let rate = transfer.plan.bytesPerSecond
                let count = min(rate.map(Self.pieceSize(forRate:)) ?? Self.sliceSize, end - transfer.offset)
                let slice = transfer.plan.body[transfer.offset..<(transfer.offset + count)]
                let written = context.eventLoop.makePromise(of: Void.self)
                transfer.lastWrite = written.futureResult
                transfer.offset += count
                if let rate, transfer.offset < end {
                    let delay = TimeAmount.nanoseconds(Int64(count) * 1_000_000_000 / Int64(rate))
                    transfer.pacingTimer = context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
                        guard case .sending(var paced) = self.state else { return }
                        paced.pacingTimer = nil
                        self.state = .sending(paced)
                        self.pump(context: context)
                    }
                }
                self.state = .sending(transfer)
                self.writeBody(slice, countingFor: transfer.path, promise: written, context: context)
            }
        }

        private func writeBody(
            _ bytes: ArraySlice<UInt8>,
            countingFor path: String,
            promise: EventLoopPromise<Void>,
            context: ChannelHandlerContext
        ) {
            var buffer = context.channel.allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            let store = self.store
            let count = bytes.count
            promise.futureResult.whenSuccess { store.addBodyBytesSent(count, to: path) }
            // Flushing each slice makes a TLS handler encrypt and send it now; unflushed, its
            // plaintext would pile up in the handler without ever making the channel unwritable.
            context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(buffer))), promise: promise)
        }

        private func finish(_ transfer: Transfer, context: ChannelHandlerContext) {
            switch transfer.plan.ending {
            case .complete(let close):
                // Leave `.sending` before writing `.end`: the pipeline handler may deliver the next
                // pipelined request from inside that write.
                self.state = close ? .finished : .idle
                self.endResponse()
                let ended = context.writeAndFlush(self.wrapOutboundOut(.end(nil)))
                if close {
                    ended.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
                }
            case .cut(let reset):
                self.state = .finished
                self.endResponse()
                transfer.lastWrite.assumeIsolated().whenComplete { _ in
                    ConnectionTracker.abort(context.channel, reset: reset)
                }
            case .stall:
                self.state = .finished
            }
        }

        /// The size of one paced piece: about a twentieth of a second's worth, at most 16 KiB.
        private static func pieceSize(forRate bytesPerSecond: Int) -> Int {
            min(max(1, bytesPerSecond / 20), 16 * 1024)
        }
    }
}
