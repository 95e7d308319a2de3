import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// A server's status line below 100: one clear error, not a crash of the process (AsyncHTTPClient
/// trapped on the body that followed: exit 132).
@Suite("A status below 100", .timeLimit(.minutes(1)))
struct InvalidStatusTests {
    @Test(arguments: ["000", "099"])
    func aStatusBelow100IsAnErrorNamingItAndIsNotRetried(status: String) async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let server = try await RawReplyServer.start(reply: "HTTP/1.1 \(status) Odd\r\nContent-Length: 5\r\n\r\nhello")
        defer { server.stop() }
        let run = try f.start(store: InMemoryDownloadStore())
        let url = "http://127.0.0.1:\(server.port)/x.bin"
        let request = try DownloadRequest(url: url, directory: f.directory)
        await #expect {
            try await run.manager.download(request)
        } throws: { error in
            guard let error = error as? SwoopError else { return false }
            return error.code == .invalidResponse
                && error.message == "invalid HTTP response from \(url): status \(Int(status) ?? -1) (a status is from 100 to 999)"
        }
        #expect(server.connections == 1)
        #expect(!FileManager.default.fileExists(atPath: f.path("x.bin")))
        await run.stop()
    }

    /// The guard stands between the decoder and AsyncHTTPClient: statuses from 100 on pass as before.
    @Test func aServerErrorStatusStillReadsAsTheStatus() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let server = try await RawReplyServer.start(reply: "HTTP/1.1 503 Busy\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy")
        defer { server.stop() }
        var configuration = f.configuration
        configuration.retry.maxRetries = 0
        let run = try f.start(store: InMemoryDownloadStore(), configuration: configuration)
        let request = try DownloadRequest(url: "http://127.0.0.1:\(server.port)/y.bin", directory: f.directory)
        await #expect {
            try await run.manager.download(request)
        } throws: { ($0 as? SwoopError)?.code == .httpStatus }
        await run.stop()
    }
}
