import Foundation
import SwoopKit
import SwoopRPC
import SwoopTesting
import Synchronization
import Testing

/// A running manager behind `Aria2RPC`, a test server and a download root, for one test.
struct RPCFixture {
    static let secret = "s3cret"
    let server: TestServer
    let root: String
    let manager: DownloadManager
    let rpc: Aria2RPC
    let runner: Task<Void, Never>
    let shutdowns: ShutdownLog

    static func make(maxConcurrent: Int = 5, allowed: [String] = [], catalogue: (any DownloadCatalogue)? = nil, node: String? = nil) async throws -> RPCFixture {
        let server = try await TestServer.start()
        let base = scratchPath("swoop-rpc")
        let root = base + "/downloads"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: base + "/locks", withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.retry.maxRetries = 1
        configuration.retry.baseDelay = .milliseconds(10)
        configuration.timeouts.idle = .seconds(5)
        configuration.lockDirectory = base + "/locks"
        configuration.queue.maxConcurrentDownloads = maxConcurrent
        let manager = try DownloadManager(configuration: configuration)
        let runner = Task { await manager.run() }
        let shutdowns = ShutdownLog()
        var settings = Aria2RPC.Settings(secret: secret, roots: DownloadRoots(defaultDirectory: root, allowed: allowed), catalogue: catalogue)
        settings.node = node
        let rpc = Aria2RPC(
            manager: manager, settings: settings,
            shutdown: { force in shutdowns.append(force) }
        )
        return RPCFixture(server: server, root: root, manager: manager, rpc: rpc, runner: runner, shutdowns: shutdowns)
    }

    /// Serves `size` random bytes at `path` (strong ETag) and returns them.
    @discardableResult
    func serve(_ path: String, size: Int, seed: UInt64 = 1) -> [UInt8] {
        let body = Resource.random(size: size, seed: seed)
        server.serve(path, Resource(body: body, etag: "\"v1\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"))
        return body
    }

    /// Calls `method` with the token, returning its result or its error.
    func call(_ method: String, _ params: JSONValue...) async -> Result<JSONValue, RPCError> {
        await rpc.result(of: RPCCall(id: .integer(1), method: method, params: [.string("token:\(Self.secret)")] + params))
    }

    /// Calls `method` and returns its result, recording an issue when it failed.
    func value(_ method: String, _ params: JSONValue..., sourceLocation: SourceLocation = #_sourceLocation) async -> JSONValue {
        let result = await rpc.result(of: RPCCall(id: .integer(1), method: method, params: [.string("token:\(Self.secret)")] + params))
        switch result {
        case .success(let value):
            // Statuses come as written JSON text: read back as values, as a client would.
            return JSONValue.parse(value.serialized()) ?? .null
        case .failure(let error):
            Issue.record("\(method) failed: \(error.message)", sourceLocation: sourceLocation)
            return .null
        }
    }

    /// A download's status (every key).
    func status(_ gid: String) async -> [String: JSONValue] {
        await value("aria2.tellStatus", .string(gid)).object ?? [:]
    }

    /// Waits (up to ``patience``) until the download's status is `status`.
    func waitFor(_ gid: String, _ status: String) async -> Bool {
        let deadline = ContinuousClock.now + patience
        while ContinuousClock.now < deadline {
            if await self.status(gid)["status"]?.string == status { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    func stop() async {
        try? await manager.shutdown()
        await runner.value
        try? await server.shutdown()
    }
}

final class ShutdownLog: Sendable {
    private let forces = Mutex<[Bool]>([])
    func append(_ force: Bool) { forces.withLock { $0.append(force) } }
    var calls: [Bool] { forces.withLock { $0 } }
}

extension Result where Failure == RPCError {
    /// The error's message, or `nil` on success.
    var errorMessage: String? {
        if case .failure(let error) = self { return error.message }
        return nil
    }
}
