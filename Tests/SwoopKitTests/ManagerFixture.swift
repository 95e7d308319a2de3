import Foundation
import NIOConcurrencyHelpers
import SwoopTesting
import Testing

@testable import SwoopKit

/// A test server, fresh directories and a fast configuration for one `DownloadManager` test.
struct ManagerFixture {
    let server: TestServer
    let directory: String
    let lockDirectory: String
    var configuration: Configuration

    static func make(host: String = "127.0.0.1") async throws -> ManagerFixture {
        let base = try await Fixture.make(host: host)
        var configuration = base.configuration
        configuration.timeouts.idle = .seconds(10)
        return ManagerFixture(server: base.server, directory: base.directory, lockDirectory: base.lockDirectory, configuration: configuration)
    }

    /// Serves `size` random bytes at `path` with a strong ETag and returns them.
    @discardableResult
    func serve(_ path: String, size: Int, seed: UInt64 = 1, on server: TestServer? = nil) -> [UInt8] {
        let body = Resource.random(size: size, seed: seed)
        let resource = Resource(body: body, etag: "\"v1\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
        (server ?? self.server).serve(path, resource)
        return body
    }

    /// Serves `size` random bytes at `path` whose response stalls after `stallAt` bytes: the first
    /// response only (a resume then finishes), or `every` one. Returns the bytes.
    @discardableResult
    func serveStalling(_ path: String, size: Int, after stallAt: Int, every: Bool = false, seed: UInt64 = 1) -> [UInt8] {
        let body = serve(path, size: size, seed: seed)
        if every {
            server.setDefault(path, .stallAfter(bytes: stallAt))
        } else {
            server.enqueue(path, .stallAfter(bytes: stallAt))
        }
        return body
    }

    func request(_ path: String, on server: TestServer? = nil) throws -> DownloadRequest {
        try DownloadRequest(url: (server ?? self.server).url(path), directory: directory)
    }

    /// A manager over `store` whose `run()` already runs, with an event log subscribed from the start.
    func start(
        store: InMemoryDownloadStore = InMemoryDownloadStore(), configuration: Configuration? = nil
    ) throws -> ManagerRun {
        let manager = try DownloadManager(configuration: configuration ?? self.configuration, store: store)
        let events = ManagerEventLog(manager.events())
        let runner = Task { await manager.run() }
        return ManagerRun(manager: manager, store: store, events: events, runner: runner)
    }

    func path(_ name: String) -> String { directory + "/" + name }

    /// A fresh `waiting` record for `path` on the server, to store by hand.
    func record(_ path: String) -> DownloadRecord {
        DownloadRecord(url: server.url(path), directory: directory, requestedName: "", bootID: FileSystem.bootID)
    }

    func files() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    /// Waits (up to 20 s) until the part file of `name` holds `size` bytes.
    func partFileReaches(_ name: String, size: Int) async -> Bool {
        await eventually { fileSize(path(name + ".swoop")) == size }
    }

    /// Stops the server in the background (for `defer`).
    func stop() {
        let server = self.server
        Task { try? await server.shutdown() }
    }
}

/// A running manager and what it was built from.
struct ManagerRun {
    let manager: DownloadManager
    let store: InMemoryDownloadStore
    let events: ManagerEventLog
    let runner: Task<Void, Never>

    /// Shuts the manager down and waits for `run()` to return.
    func stop() async {
        try? await manager.shutdown()
        await runner.value
    }

    /// Waits until each id has had a terminal event.
    func waitForTerminal(_ ids: [Download.ID], timeout: Duration = patience) async -> Bool {
        await events.wait(timeout: timeout) { log in
            let ended = Set(log.filter(\.isTerminal).map(\.download.id))
            return ids.allSatisfy(ended.contains)
        }
    }
}

/// Every event one subscriber received, collected as it arrives.
final class ManagerEventLog: Sendable {
    private struct State {
        var events: [DownloadEvent] = []
        var ended = false
    }

    private let state: NIOLockedValueBox<State>

    init(_ stream: DownloadEvents) {
        let state = NIOLockedValueBox(State())
        self.state = state
        Task {
            for await event in stream {
                state.withLockedValue { $0.events.append(event) }
            }
            state.withLockedValue { $0.ended = true }
        }
    }

    var all: [DownloadEvent] { state.withLockedValue { $0.events } }

    /// Whether the stream has finished.
    var ended: Bool { state.withLockedValue { $0.ended } }

    func of(_ id: Download.ID) -> [DownloadEvent] {
        all.filter { $0.download.id == id }
    }

    func terminal(_ id: Download.ID) -> [DownloadEvent] {
        of(id).filter(\.isTerminal)
    }

    /// Polls until `condition` holds for the events so far, or `timeout` passes.
    func wait(timeout: Duration = patience, _ condition: ([DownloadEvent]) -> Bool) async -> Bool {
        await eventually(timeout: timeout) { condition(all) }
    }
}

extension DownloadEvent {
    /// The case's name, for comparing event sequences.
    var caseName: String {
        switch self {
        case .added: "added"
        case .started: "started"
        case .progress: "progress"
        case .notice: "notice"
        case .paused: "paused"
        case .completed: "completed"
        case .alreadyComplete: "alreadyComplete"
        case .failed: "failed"
        case .removed: "removed"
        }
    }
}

/// The open file descriptors of this process (entries of /proc/self/fd).
func openFileDescriptorCount() -> Int {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count
}

/// The open file descriptors of this process that refer to files under `directory`.
func openFileDescriptors(under directory: String) -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.compactMap { entry in
        let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry)
        return target.flatMap { $0.hasPrefix(directory) ? $0 : nil }
    }
}
