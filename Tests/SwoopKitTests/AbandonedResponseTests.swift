import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// A response Swoop decides not to use is not read to its end, over TLS as over plain HTTP: the
/// connection is closed at once, not after the server has sent the rest (a TLS close waited for the
/// server's `close_notify`, reading and dropping whatever came first; h2o and S3 ignore `If-Range`,
/// so a stale `206` for a 200 MiB file made Swoop read 376 MiB).
@Suite("Abandoned responses")
struct AbandonedResponseTests {
    static let size = 32 << 20
    /// Room for what the kernel's socket buffers on loopback hold when the client closes.
    static let slack = 8 << 20

    @Test(arguments: [false, true])
    func aStaleRangeIsNotReadToItsEnd(tls: Bool) async throws {
        let certificate = tls ? try TestCertificate.makeSelfSigned() : nil
        var f = try await Fixture.make(tls: certificate)
        defer { f.stop() }
        f.configuration.tls.caCertificatePath = certificate?.certificatePath
        f.configuration.retry.maxRetries = 0
        let store = InMemoryDownloadStore()
        f.serve("/s.bin", size: Self.size, etag: "\"v1\"")
        f.server.enqueue("/s.bin", .cutAfter(bytes: 4 << 20))
        let (first, _) = await f.download(try f.request("/s.bin"), store: store)
        #expect(throws: (any Error).self) { try first.get() }
        let sentBefore = f.server.bodyBytesSent(to: "/s.bin")

        // The file changed on the server, which serves the range anyway (If-Range ignored).
        let body = f.serve("/s.bin", size: Self.size, seed: 2, etag: "\"v2\"")
        f.server.setDefault("/s.bin", .ignoreIfRange)
        let (second, events) = await f.download(try f.request("/s.bin"), store: store)
        _ = try second.get()
        #expect(sha256(file: f.path("s.bin")) == sha256(body))
        #expect(events.notices.contains { $0.contains("changed") }, "\(events.notices)")
        let requests = f.server.requests(to: "/s.bin")
        #expect(requests.count == 3)
        #expect(requests[1].header("If-Range") == "\"v1\"")
        // The stale 206 (28 MiB) was dropped with its connection: the whole new file, and no more
        // than the socket buffers held of the stale one. Counted once the server has stopped sending
        // (a connection read on in the background would still be sending when the download returns).
        var sent = f.server.bodyBytesSent(to: "/s.bin") - sentBefore
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(300))
            let now = f.server.bodyBytesSent(to: "/s.bin") - sentBefore
            if now == sent { break }
            sent = now
        }
        #expect(sent <= Self.size + Self.slack, "sent \(sent) bytes for a \(Self.size)-byte file")
    }
}
