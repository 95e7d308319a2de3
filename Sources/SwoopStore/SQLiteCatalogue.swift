import Foundation
import GRDB
import NIOConcurrencyHelpers
import SwoopKit

/// A fleet's catalogue in one SQLite file, for daemons on one machine (several download disks, one
/// queue). The same contract as the PostgreSQL catalogue: claims are immediate transactions (one
/// writer at a time, so the fleet's limits hold), the clock is this machine's, and ``changes()``
/// watches `PRAGMA data_version` for other processes' commits.
public final class SQLiteCatalogue: DownloadCatalogue, Sendable {
    let database: DatabaseQueue
    public let path: String
    private let wakeUps = NIOLockedValueBox<[UUID: AsyncStream<Void>.Continuation]>([:])
    private let started = NIOLockedValueBox<Set<String>>([])
    /// Set by ``close()``: later calls fail with "it was closed".
    private let closed = NIOLockedValueBox(false)
    /// How often ``changes()`` looks for other processes' commits.
    let pollInterval: Duration

    public init(path: String, pollInterval: Duration = .milliseconds(250)) throws {
        self.path = path
        self.pollInterval = pollInterval
        var configuration = GRDB.Configuration()
        configuration.busyMode = .timeout(10)
        configuration.journalMode = .wal
        do {
            database = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw SwoopError(.store, "cannot open the fleet's store \(path): \(error)", cause: error)
        }
    }

    var now: Double { Date().timeIntervalSince1970 }

    public func prepare() async throws {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("catalogue-v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE catalogue_downloads (
                        id TEXT PRIMARY KEY, position INTEGER NOT NULL, priority INTEGER NOT NULL DEFAULT 0,
                        urls TEXT NOT NULL, host TEXT NOT NULL, options TEXT NOT NULL DEFAULT '{}', state TEXT NOT NULL,
                        node TEXT, epoch INTEGER NOT NULL DEFAULT 0, lease_until REAL, requested TEXT,
                        total_bytes INTEGER, completed_bytes INTEGER NOT NULL DEFAULT 0, speed REAL NOT NULL DEFAULT 0,
                        file_name TEXT, error TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL);
                    CREATE INDEX catalogue_queue ON catalogue_downloads (priority DESC, position);
                    CREATE TABLE catalogue_nodes (
                        name TEXT PRIMARY KEY, address TEXT NOT NULL DEFAULT '', started_at REAL NOT NULL, beat_at REAL NOT NULL,
                        active INTEGER NOT NULL DEFAULT 0, speed REAL NOT NULL DEFAULT 0);
                    """
            )
        }
        // Parts of downloads split across nodes (a shared download directory).
        migrator.registerMigration("catalogue-v2") { db in
            try db.execute(
                sql: """
                    ALTER TABLE catalogue_downloads ADD COLUMN parent TEXT;
                    ALTER TABLE catalogue_downloads ADD COLUMN part TEXT;
                    CREATE INDEX catalogue_parts ON catalogue_downloads (parent, position) WHERE parent IS NOT NULL;
                    ALTER TABLE catalogue_nodes ADD COLUMN shared_dir TEXT NOT NULL DEFAULT '';
                    """
            )
        }
        // Where each download was written, on its node; which run of a daemon holds a node's name.
        migrator.registerMigration("catalogue-v3") { db in
            try db.execute(
                sql: """
                    ALTER TABLE catalogue_downloads ADD COLUMN directory TEXT;
                    ALTER TABLE catalogue_nodes ADD COLUMN instance TEXT NOT NULL DEFAULT '';
                    CREATE INDEX catalogue_stopped ON catalogue_downloads (updated_at, id)
                        WHERE state IN ('completed', 'failed', 'removed') AND parent IS NULL;
                    """
            )
        }
        try await withErrors("opening") { try migrator.migrate(database) }
    }

    public func add(_ items: [CatalogueItem]) async throws {
        guard !items.isEmpty else { return }
        let now = self.now
        try await withErrors("adding downloads to") {
            try await database.write { db in try Self.insert(items, db, now: now) }
        }
        if items.contains(where: { !$0.paused }) { wake() }
    }

    /// Inserts `items` at the end of the queue, in their order.
    static func insert(_ items: [CatalogueItem], _ db: Database, now: Double) throws {
        var position = try Int.fetchOne(db, sql: "SELECT coalesce(max(position), 0) FROM catalogue_downloads") ?? 0
        for item in items {
            position += CatalogueRules.positionStep
            let urls = String(decoding: try JSONEncoder().encode(item.urls), as: UTF8.self)
            try db.execute(
                sql: """
                    INSERT INTO catalogue_downloads (id, position, priority, urls, host, options, state, created_at, updated_at, parent, part)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    item.id.rawValue, position, item.priority, urls, item.host, item.options, item.paused ? "paused" : "waiting", now, now,
                    item.parent?.rawValue, item.part?.json,
                ]
            )
        }
    }

    public func parts(of id: Download.ID) async throws -> [CatalogueEntry] {
        try await withErrors("reading") {
            try await database.read { db in try Self.entries(db, where: "parent = ? ORDER BY position", arguments: [id.rawValue]) }
        }
    }

    public func entries(ids: [Download.ID]) async throws -> [CatalogueEntry] {
        let found = try await withErrors("reading") {
            try await database.read { db in
                try Self.entries(db, where: "id IN (\(Self.placeholders(ids.count)))", arguments: StatementArguments(ids.map(\.rawValue)))
            }
        }
        let byID = Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return ids.compactMap { byID[$0] }
    }

    public func entries(in states: Set<Download.State>?, offset: Int, limit: Int) async throws -> [CatalogueEntry] {
        let names = (states ?? Set(Download.State.allCases)).map(\.rawValue).sorted()
        return try await withErrors("reading") {
            try await database.read { db in
                try Self.entries(
                    db, where: "state IN (\(Self.placeholders(names.count))) AND parent IS NULL ORDER BY priority DESC, position LIMIT ? OFFSET ?",
                    arguments: StatementArguments(names) + [max(0, limit), max(0, offset)]
                )
            }
        }
    }

    public func stopped(offset: Int, limit: Int) async throws -> [CatalogueEntry] {
        try await withErrors("reading") {
            try await database.read { db in
                try Self.entries(
                    db, where: "state IN ('completed', 'failed', 'removed') AND parent IS NULL ORDER BY updated_at, id LIMIT ? OFFSET ?",
                    arguments: [max(0, limit), max(0, offset)]
                )
            }
        }
    }

    public func ids(startingWith prefix: String, limit: Int) async throws -> [Download.ID] {
        try await withErrors("reading") {
            try await database.read { db in
                try String.fetchAll(
                    db, sql: "SELECT id FROM catalogue_downloads WHERE id >= ? AND id < ? AND parent IS NULL ORDER BY id LIMIT ?",
                    arguments: [prefix, prefix + "g", max(0, limit)]
                ).filter { $0.hasPrefix(prefix) }.map(Download.ID.init)
            }
        }
    }

    public func counts() async throws -> [Download.State: Int] {
        try await withErrors("counting") {
            try await database.read { db in
                var counts: [Download.State: Int] = [:]
                for row in try GRDB.Row.fetchAll(db, sql: "SELECT state, count(*) FROM catalogue_downloads WHERE parent IS NULL GROUP BY state") {
                    if let state = Download.State(rawValue: row[0]) { counts[state] = row[1] }
                }
                return counts
            }
        }
    }

    public func join(_ beat: NodeBeat, lease: Duration) async throws -> FleetNode? {
        let now = self.now
        let holder = try await withErrors("joining") {
            try await database.write { db -> String? in
                let row = try GRDB.Row.fetchOne(db, sql: "SELECT instance, beat_at FROM catalogue_nodes WHERE name = ?", arguments: [beat.name])
                if let row, (row[0] as String) != beat.instance, (row[1] as Double) >= now - lease.seconds { return beat.name }
                try db.execute(sql: "DELETE FROM catalogue_nodes WHERE name = ?", arguments: [beat.name])
                _ = try Self.record(beat, db, now: now, first: true)
                return nil
            }
        }
        started.withLockedValue { _ = $0.insert(beat.name) }
        guard let holder else { return nil }
        return try await self.holder(of: holder)
    }

    @discardableResult
    public func beat(_ beat: NodeBeat) async throws -> Bool {
        let first = started.withLockedValue { $0.insert(beat.name).inserted }
        let now = self.now
        return try await withErrors("recording a heartbeat in") {
            try await database.write { db in try Self.record(beat, db, now: now, first: first) }
        }
    }

    /// Writes a heartbeat, unless another run holds the name; takes nodes silent too long off the list.
    static func record(_ beat: NodeBeat, _ db: Database, now: Double, first: Bool) throws -> Bool {
        try db.execute(
            sql: """
                INSERT INTO catalogue_nodes (name, address, started_at, beat_at, active, speed, shared_dir, instance) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET address = excluded.address, beat_at = excluded.beat_at, active = excluded.active,
                    speed = excluded.speed, shared_dir = excluded.shared_dir,
                    started_at = CASE WHEN ? THEN excluded.started_at ELSE started_at END
                WHERE instance = excluded.instance
                """,
            arguments: [beat.name, beat.address, now, now, beat.activeDownloads, beat.bytesPerSecond, beat.sharedDirectory, beat.instance, first]
        )
        let recorded = db.changesCount > 0
        try db.execute(
            sql: "DELETE FROM catalogue_nodes WHERE beat_at < ? AND name <> ?",
            arguments: [now - beat.forgetsSilentNodesAfter.seconds, beat.name]
        )
        return recorded
    }

    public func leave(node: String, instance: String) async throws {
        try await withErrors("taking a node off the list of") {
            try await database.write { db in
                try db.execute(sql: "DELETE FROM catalogue_nodes WHERE name = ? AND (? = '' OR instance = ?)", arguments: [node, instance, instance])
            }
        }
    }

    public func nodes() async throws -> [FleetNode] {
        let now = self.now
        return try await withErrors("reading the nodes of") {
            try await database.read { db in
                try GRDB.Row.fetchAll(db, sql: "SELECT name, address, started_at, beat_at, active, speed, shared_dir FROM catalogue_nodes ORDER BY name").map { row in
                    let beat: Double = row[3]
                    return FleetNode(
                        name: row[0], address: row[1], startedAt: Date(timeIntervalSince1970: row[2]), lastBeat: Date(timeIntervalSince1970: beat),
                        activeDownloads: row[4], bytesPerSecond: row[5], silentFor: max(0, now - beat), sharedDirectory: row[6]
                    )
                }
            }
        }
    }

    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let key = UUID()
        wakeUps.withLockedValue { $0[key] = continuation }
        // Registered first, then checked: a close() at the same time either finishes it or is seen.
        if closed.withLockedValue({ $0 }) {
            continuation.finish()
            return stream
        }
        let database = self.database
        let interval = pollInterval
        let closed = self.closed
        // Other processes' commits: SQLite tells a connection only that the file changed since.
        // Read before the first wake-up, so that no commit after it goes unseen.
        let initial = try? database.read { db in try Int.fetchOne(db, sql: "PRAGMA data_version") }
        let polling = Task {
            var seen = initial
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled || closed.withLockedValue({ $0 }) { break }
                let version = try? await database.read { db in try Int.fetchOne(db, sql: "PRAGMA data_version") }
                if version != seen {
                    seen = version
                    continuation.yield()
                }
            }
        }
        continuation.onTermination = { [weak self] _ in
            polling.cancel()
            self?.wakeUps.withLockedValue { $0[key] = nil }
        }
        continuation.yield()
        return stream
    }

    /// Refuses every later call ("it was closed") and ends the wake-up streams. The connection
    /// itself is closed by GRDB when the last reference goes: a call already under way (a node's
    /// heartbeat while its daemon stops) finishes on it, where closing it under that call would
    /// crash the process (GRDB's `close()` leaves a dangling SQLite handle to the next access).
    public func close() async {
        closed.withLockedValue { $0 = true }
        let continuations = wakeUps.withLockedValue { wakeUps in
            defer { wakeUps = [:] }
            return Array(wakeUps.values)
        }
        for continuation in continuations { continuation.finish() }
    }

    // MARK: - Helpers

    /// Wakes this process's listeners (other processes see the commit through `data_version`).
    func wake() {
        for continuation in wakeUps.withLockedValue({ Array($0.values) }) { continuation.yield() }
    }

    static let columns = """
        id, urls, options, priority, state, node, epoch, requested, total_bytes, completed_bytes, speed, file_name, error, created_at, updated_at,
        parent, part, directory
        """

    static func entries(_ db: Database, where condition: String, arguments: StatementArguments) throws -> [CatalogueEntry] {
        try GRDB.Row.fetchAll(db, sql: "SELECT \(columns) FROM catalogue_downloads WHERE \(condition)", arguments: arguments).map(entry)
    }

    static func entry(_ row: GRDB.Row) throws -> CatalogueEntry {
        let urls = try JSONDecoder().decode([String].self, from: Data((row["urls"] as String).utf8))
        let requested: String? = row["requested"]
        return CatalogueEntry(
            id: Download.ID(row["id"]), urls: urls, options: row["options"], priority: row["priority"],
            state: Download.State(rawValue: row["state"]) ?? .failed, node: row["node"], epoch: row["epoch"],
            requested: requested.flatMap(CatalogueControl.init(rawValue:)), totalBytes: row["total_bytes"],
            completedBytes: row["completed_bytes"], bytesPerSecond: row["speed"], fileName: row["file_name"], error: row["error"],
            createdAt: Date(timeIntervalSince1970: row["created_at"]), updatedAt: Date(timeIntervalSince1970: row["updated_at"]),
            parent: (row["parent"] as String?).map(Download.ID.init), part: CataloguePart(json: row["part"]), directory: row["directory"]
        )
    }

    static func placeholders(_ count: Int) -> String {
        count == 0 ? "NULL" : Array(repeating: "?", count: count).joined(separator: ", ")
    }

    func withErrors<Result: Sendable>(_ doing: String, _ body: () async throws -> Result) async throws -> Result {
        if closed.withLockedValue({ $0 }) { throw SwoopError(.store, "\(doing) the fleet's store \(path) failed: it was closed") }
        do {
            return try await body()
        } catch let error as SwoopError {
            throw error
        } catch {
            throw SwoopError(.store, "\(doing) the fleet's store \(path) failed: \(error)", cause: error)
        }
    }
}
