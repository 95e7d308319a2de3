import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// A test server, a fresh directory and a fast configuration for one test.
struct Fixture {
    let server: TestServer
    let directory: String
    let lockDirectory: String
    var configuration: Configuration

    static func make(tls: TestCertificate? = nil, host: String = "127.0.0.1") async throws -> Fixture {
        let server = try await TestServer.start(tls: tls, host: host)
        let root = scratchPath("swoop-test")
        let directory = root + "/out"
        let locks = root + "/locks"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: locks, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.retry.baseDelay = .milliseconds(10)
        configuration.retry.maxDelay = .milliseconds(50)
        // Long enough for a fully loaded run (550 tests and a Chromium on two cores: a body waited over
        // 5 s once); tests about timeouts set their own.
        configuration.timeouts.connect = .seconds(15)
        configuration.timeouts.idle = .seconds(15)
        configuration.lockDirectory = locks
        return Fixture(server: server, directory: directory, lockDirectory: locks, configuration: configuration)
    }

    /// Serves `size` random bytes at `path` with a strong ETag and returns them.
    @discardableResult
    func serve(_ path: String, size: Int, seed: UInt64 = 1, etag: String? = "\"v1\"", configure: (inout Resource) -> Void = { _ in }) -> [UInt8] {
        let body = Resource.random(size: size, seed: seed)
        var resource = Resource(body: body, etag: etag, lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
        configure(&resource)
        server.serve(path, resource)
        return body
    }

    func request(_ path: String, fileName: String? = nil) throws -> DownloadRequest {
        try DownloadRequest(url: server.url(path), directory: directory, fileName: fileName)
    }

    /// Runs one download with its own manager and collects the events.
    func download(
        _ request: DownloadRequest, store: any DownloadStore = InMemoryDownloadStore(), configuration: Configuration? = nil
    ) async -> (result: Result<DownloadOutcome, SwoopError>, events: [DownloadEvent]) {
        let manager: DownloadManager
        do {
            manager = try DownloadManager(configuration: configuration ?? self.configuration, store: store)
        } catch {
            return (.failure(error as? SwoopError ?? SwoopError(.store, "\(error)")), [])
        }
        let stream = manager.events()
        let collector = Task { await stream.reduce(into: [DownloadEvent]()) { $0.append($1) } }
        let result: Result<DownloadOutcome, SwoopError>
        do {
            result = .success(try await manager.download(request))
        } catch {
            result = .failure(error as? SwoopError ?? SwoopError(.store, "\(error)"))
        }
        try? await manager.shutdown()
        return (result, await collector.value)
    }

    /// A store and part file as an interrupted download of `path` left them (ETag "v1").
    func interrupted(
        _ path: String, total: Int, committed: Int, synced: Int, partFile: [UInt8], bootID: String = FileSystem.bootID
    ) throws -> InMemoryDownloadStore {
        let store = InMemoryDownloadStore()
        var record = DownloadRecord(url: server.url(path), directory: directory, requestedName: "", bootID: bootID)
        record.fileName = String(path.dropFirst())
        record.state = .active
        record.totalBytes = total
        record.committedBytes = committed
        record.syncedBytes = synced
        record.etag = "\"v1\""
        try store.save(record)
        try Data(partFile).write(to: URL(fileURLWithPath: self.path(String(path.dropFirst()) + ".swoop")))
        return store
    }

    /// Waits (up to 20 s) until the part file of `name` holds `size` bytes.
    func partFileReaches(_ name: String, size: Int) async -> Bool {
        await eventually { fileSize(path(name + ".swoop")) == size }
    }

    func files() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    func path(_ name: String) -> String { directory + "/" + name }

    func shutdown() async {
        try? await server.shutdown()
    }

    /// Stops the server in the background (for `defer`).
    /// Stops the server and removes the test's directory (part files, locks and all).
    func stop() {
        let server = self.server
        let root = (directory as NSString).deletingLastPathComponent
        Task {
            try? await server.shutdown()
            try? FileManager.default.removeItem(atPath: root)
        }
    }
}

func sha256(_ bytes: [UInt8]) -> String { sha256Hex(bytes) }

func sha256(file path: String) -> String? { sha256Hex(file: path) }

extension Array where Element == DownloadEvent {
    var notices: [String] {
        compactMap { if case .notice(_, let message) = $0 { return message } else { return nil } }
    }
}
