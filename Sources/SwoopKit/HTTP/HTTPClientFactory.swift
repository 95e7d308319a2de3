import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Tracing

/// Builds the HTTPClient the way file downloads need it.
enum HTTPClientFactory {
    /// - Parameter readSize: The socket read size; `configuration.receiveBufferSize` by default.
    static func make(
        _ configuration: Configuration, proxy: HTTPClient.Configuration.Proxy? = nil, readSize: Int? = nil
    ) throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        // Closing a TLS connection sends `close_notify` and, by default, waits up to 5 s for the
        // server's, reading (and dropping) all the server sends meanwhile: a response Swoop stopped
        // using (a stale 206, a segment cut short) was read to its end, or the close waited 5 s.
        // As curl does, close at once: a body's end is known from its length, not from the close.
        tls.shutdownTimeout = .zero
        if configuration.tls.insecure {
            tls.certificateVerification = .none
        }
        if let ca = configuration.tls.caCertificatePath {
            guard FileManager.default.isReadableFile(atPath: ca) else {
                throw SwoopError(.invalidArgument, "cannot read CA certificate file \(ca)")
            }
            tls.additionalTrustRoots = [.file(ca)]
        }
        var config = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(configuration.timeouts.connect), read: TimeAmount(configuration.timeouts.idle)),
            decompression: .disabled
        )
        config.httpVersion = configuration.allowHTTP2 ? .automatic : .http1Only
        config.proxy = proxy
        // With no tracer set up, AsyncHTTPClient still opens a no-op span and computes its
        // attributes for every request (3% of the CPU time of 2,000 small files); none then.
        if InstrumentationSystem.tracer is NoOpTracer { config.tracing.tracer = nil }
        // A TLS failure would otherwise be retried silently until the connect timeout.
        config.connectionPool.retryConnectionEstablishment = false
        // Room for every connection the queue may open to one host: each running download from it
        // with as many connections as a download may have (any download may ask for more than the
        // default `-x`). The pool's own default, 8, held `-x 16` to 8 connections, the other
        // segments' requests queued behind them while the progress line said ×16.
        config.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(
            8, (configuration.queue.maxPerHost ?? configuration.queue.maxConcurrentDownloads) * Configuration.Segments.connectionLimit
        )
        let readSize = readSize ?? configuration.receiveBufferSize
        config.http1_1ConnectionDebugInitializer = { channel in
            // NIO pools `maxMessagesPerRead` receive buffers per channel (4 by default): 2 MiB of
            // 512 KiB reads resident through a long download. One read per wake-up keeps one buffer,
            // at no cost measured at these sizes. Reads start small and grow with the bodies the
            // connection carries (see `GrowingReadSize`).
            let reads = GrowingReadSize(initial: Self.firstReadSize, maximum: readSize)
            return channel.eventLoop.submit {
                try StatusLineGuard.install(on: channel)
            }.flatMap {
                channel.setOption(ChannelOptions.recvAllocator, value: reads)
            }.flatMap {
                channel.setOption(ChannelOptions.maxMessagesPerRead, value: 1)
            }
        }
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: config)
    }

    /// A new connection's first socket read: enough for a response's head and a small body.
    static let firstReadSize = 16 * 1024
}
