import Foundation
import GRDB
import SwoopKit
import Testing

@testable import SwoopStore

/// The schema's two ways: a new database made in its latest shape at once, and an older one
/// stepped forward. Both must end the same, to the SQL text SQLite keeps.
@Suite("Store schema")
struct SchemaTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "swoop-schema-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// Every table and index with the SQL that made it (GRDB's bookkeeping aside).
    static func schema(_ path: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT type || ' ' || name || ' ON ' || tbl_name || ': ' || coalesce(sql, '') FROM sqlite_master
                    WHERE name != 'grdb_migrations' AND name NOT LIKE 'sqlite_autoindex_grdb%' ORDER BY type, name
                    """
            )
        }
    }

    static func appliedMigrations(_ path: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in
            try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
        }
    }

    /// The schema a database gets by running every step, as versions before the merge did.
    func stepByStepSchema() throws -> [String] {
        let path = directory + "/steps.sqlite"
        try SQLiteDownloadStore.stepByStepMigrator.migrate(DatabaseQueue(path: path))
        return try Self.schema(path)
    }

    @Test func aNewDatabaseIsMadeInTheShapeTheStepsGive() throws {
        let path = directory + "/new.sqlite"
        try SQLiteDownloadStore(path: path).close()
        let expected = try stepByStepSchema()
        #expect(try Self.schema(path) == expected)
        // Both tables and six indexes: three named, three for the primary and unique keys.
        #expect(expected.filter { $0.hasPrefix("table ") }.count == 2)
        #expect(expected.filter { $0.hasPrefix("index ") }.count == 6)
        #expect(expected.contains { $0.contains("\"movedFrom\" TEXT") })
        #expect(try Self.appliedMigrations(path) == [SQLiteDownloadStore.schemaSteps.last?.identifier])
    }

    /// A database of each earlier version (the steps up to one of them applied) is stepped to the
    /// same schema; the merged steps' names are replaced by the last one's.
    @Test(arguments: SQLiteDownloadStore.schemaSteps.map(\.identifier))
    func aDatabaseOfAnEarlierVersionEndsInTheSameShape(_ upTo: String) throws {
        let path = directory + "/old.sqlite"
        try SQLiteDownloadStore.stepByStepMigrator.migrate(DatabaseQueue(path: path), upTo: upTo)
        let store = try SQLiteDownloadStore(path: path)
        // It works, not just looks right: a record goes in and comes back.
        var record = DownloadRecord(url: "http://127.0.0.1/a", directory: "/tmp/x", requestedName: "", bootID: "b")
        record.movedFrom = "http://127.0.0.1/old"
        try store.save(record)
        let saved = try #require(try store.record(id: record.id))
        #expect((saved.url, saved.state, saved.movedFrom) == (record.url, .waiting, "http://127.0.0.1/old"))
        try store.close()
        #expect(try Self.schema(path) == (try stepByStepSchema()))
        #expect(try Self.appliedMigrations(path) == [SQLiteDownloadStore.schemaSteps.last?.identifier])
        // Opened again, nothing is run twice.
        try SQLiteDownloadStore(path: path).close()
    }
}
