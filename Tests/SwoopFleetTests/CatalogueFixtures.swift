import Foundation
import SwoopKit
import SwoopPostgres
import SwoopStore
import SwoopTesting

/// The catalogues the contract holds for, and how to make several that share one queue (the nodes
/// of a fleet): for PostgreSQL a new database on the test process's private server, each node with
/// its own client; for SQLite a new file, each node with its own connection.
enum CatalogueKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    var description: String { rawValue }

    /// `count` catalogues on one new, prepared queue.
    func makeFleet(_ count: Int) async throws -> [any DownloadCatalogue] {
        var catalogues: [any DownloadCatalogue] = []
        switch self {
        case .sqlite:
            let path = try makeTemporaryDirectory("swoop-fleet") + "/fleet.sqlite"
            for _ in 0..<count { catalogues.append(try SQLiteCatalogue(path: path, pollInterval: .milliseconds(50))) }
        case .postgres:
            let server = try await PostgresServer.shared()
            let address = try PostgresAddress(parsing: server.url(database: try await server.makeDatabase("fleet")))
            // Leases looked at on every claim: the tests' leases are a fraction of a second.
            for _ in 0..<count { catalogues.append(try PostgresCatalogue(address, expiryScan: .zero, timeout: .seconds(60))) }
        }
        for catalogue in catalogues { try await catalogue.prepare() }
        return catalogues
    }

    /// One new, prepared catalogue.
    func make() async throws -> any DownloadCatalogue {
        try await makeFleet(1)[0]
    }
}

/// Closes the catalogues after `body`, whatever it throws.
func withFleet<Result>(_ kind: CatalogueKind, nodes: Int = 1, _ body: ([any DownloadCatalogue]) async throws -> Result) async throws -> Result {
    let fleet = try await kind.makeFleet(nodes)
    do {
        let result = try await body(fleet)
        for catalogue in fleet { await catalogue.close() }
        return result
    } catch {
        for catalogue in fleet { await catalogue.close() }
        throw error
    }
}

/// `count` downloads of `host`, named `NAME-0` … by path.
func items(_ count: Int, host: String = "127.0.0.1", name: String = "f", priority: Int = 0) -> [CatalogueItem] {
    (0..<count).map { CatalogueItem(urls: ["http://\(host)/\(name)-\($0)"], options: #"{"n":\#($0)}"#, priority: priority) }
}

/// A long lease, which no test outlives.
let longLease = Duration.seconds(120)

/// Waits (up to `timeout`) until `condition` holds.
func until(_ timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}
