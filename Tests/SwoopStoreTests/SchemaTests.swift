import Foundation
import GRDB
import SwoopKit
import SwoopTesting
import Testing

@testable import SwoopStore

/// The schema's two ways: a new database made in its latest shape at once, and an older one
/// stepped forward. Both must end the same, to the SQL text SQLite keeps.
@Suite("Store schema")
struct SchemaTests {
    let directory: String

    init() throws {
        directory = scratchPath("swoop-schema")
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

extension SchemaTests {
    /// The next version adds a step and merges again: a database this version made (which records
    /// only the last step) runs just the new one, keeps its rows, and ends as a new database does.
    @Test func aDatabaseMadeByThisVersionTakesTheNextStep() throws {
        let path = directory + "/now.sqlite"
        let store = try SQLiteDownloadStore(path: path)
        let record = DownloadRecord(url: "http://127.0.0.1/kept", directory: "/tmp/x", requestedName: "", bootID: "b")
        try store.save(record)
        try store.close()
        let next = SQLiteDownloadStore.SchemaStep(identifier: "v12: a next step") { db in
            try db.alter(table: "download") { t in t.add(column: "nextColumn", .text) }
        }
        let steps = SQLiteDownloadStore.schemaSteps + [next]
        let nextMigrator = SQLiteDownloadStore.merged(steps) { db in
            try SQLiteDownloadStore.createLatest(db)
            try next.run(db)
        }
        try nextMigrator.migrate(DatabaseQueue(path: path))
        let fresh = directory + "/next-new.sqlite"
        try nextMigrator.migrate(DatabaseQueue(path: fresh))
        #expect(try Self.schema(path) == (try Self.schema(fresh)))
        #expect(try Self.schema(path).contains { $0.contains("\"nextColumn\" TEXT") })
        #expect(try Self.appliedMigrations(path) == ["v12: a next step"])
        let kept = try DatabaseQueue(path: path).read { db in try String.fetchOne(db, sql: "SELECT url FROM download WHERE id = ?", arguments: [record.id.rawValue]) }
        #expect(kept == "http://127.0.0.1/kept")
    }

    /// The statements that write a download's state build no table as they run: the state's CHECK
    /// (v11) is comparisons, where an `IN (…)` list of seven made SQLite fill an ephemeral table at
    /// every insert and update.
    @Test func writingTheStateBuildsNoTable() throws {
        let path = directory + "/explain.sqlite"
        try SQLiteDownloadStore(path: path).close()
        let opcodes = try DatabaseQueue(path: path).read { db in
            try [Row.upsertSQL, Row.updateSQL, Row.claimSQL].map { sql in
                try GRDB.Row.fetchAll(db, sql: "EXPLAIN \(sql)", arguments: StatementArguments(
                    [DatabaseValue](repeating: .null, count: sql.count(where: { $0 == "?" }))
                )).map { $0["opcode"] as String }
            }
        }
        for codes in opcodes {
            #expect(codes.contains("IdxInsert") || codes.contains("Insert"))
            #expect(!codes.contains("OpenEphemeral"))
        }
    }

    /// A version-10 database's rows go through v11's rebuild with their rowids, which order the
    /// queue's ties.
    @Test func v11KeepsTheRowsAndTheirOrder() throws {
        let path = directory + "/v10.sqlite"
        let queue = try DatabaseQueue(path: path)
        try SQLiteDownloadStore.stepByStepMigrator.migrate(queue, upTo: "v10: moved from")
        try queue.write { db in
            for (rowid, id) in [(7, "00000000000000b2"), (3, "00000000000000b1"), (5, "00000000000000b3")] {
                try db.execute(sql: """
                    INSERT INTO download (rowid, id, url, directory, requestedName, state, committedBytes, syncedBytes, bootID, createdAt, updatedAt, movedFrom)
                    VALUES (?, ?, ?, '/tmp/x', '', 'interrupted', 40, 30, 'b', 1, 2, 'http://127.0.0.1/old')
                    """, arguments: [rowid, id, "http://127.0.0.1/\(id)"])
            }
        }
        try queue.close()
        let store = try SQLiteDownloadStore(path: path)
        #expect(try store.all().map(\.id.rawValue) == ["00000000000000b1", "00000000000000b3", "00000000000000b2"])
        let first = try #require(try store.all().first)
        #expect((first.state, first.committedBytes, first.syncedBytes, first.movedFrom) == (.interrupted, 40, 30, "http://127.0.0.1/old"))
        try store.close()
        #expect(try Self.appliedMigrations(path).last == "v11: state checked by comparisons")
        #expect(try Self.schema(path) == (try stepByStepSchema()))
    }

    /// A store a newer swoop stepped further is refused with one line that says so, and is left
    /// as it was (an older version took it for an empty store and failed on `CREATE TABLE`).
    @Test func aStoreOfANewerSwoopIsRefusedAndLeftAlone() throws {
        let path = directory + "/newer.sqlite"
        let store = try SQLiteDownloadStore(path: path)
        try store.save(DownloadRecord(url: "http://127.0.0.1/kept", directory: "/tmp/x", requestedName: "", bootID: "b"))
        try store.close()
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')")
        }
        let before = try Self.schema(path)
        let error = #expect(throws: SwoopError.self) { try SQLiteDownloadStore(path: path) }
        #expect(
            error?.message == "cannot open the state database \(path): it was made by a newer swoop (its schema has the step "
                + "\"v99: from the future\", which this swoop does not know): use that version, or another state directory"
        )
        #expect(try Self.schema(path) == before)
        #expect(try Self.appliedMigrations(path) == [SQLiteDownloadStore.schemaSteps.last?.identifier, "v99: from the future"])
    }

    /// Rows of a version-3 database go through v4's rebuild and v6's new ids inside the merged step.
    @Test func rowsOfAnOldDatabaseSurviveTheMergedSteps() throws {
        let path = directory + "/v3.sqlite"
        let queue = try DatabaseQueue(path: path)
        try SQLiteDownloadStore.stepByStepMigrator.migrate(queue, upTo: "v3: segments")
        try queue.write { db in
            try db.execute(sql: """
                INSERT INTO download (id, url, directory, requestedName, state, committedBytes, syncedBytes, bootID, createdAt, updatedAt)
                VALUES ('old-1', 'http://127.0.0.1/o.bin', '/tmp/x', '', 'paused', 40, 30, 'b', 1, 2)
                """)
        }
        try queue.close()
        let store = try SQLiteDownloadStore(path: path)
        let old = try #require(try store.find(url: "http://127.0.0.1/o.bin", directory: "/tmp/x", requestedName: ""))
        #expect(Download.ID.isGID(old.id.rawValue))
        #expect((old.state, old.committedBytes, old.syncedBytes) == (.paused, 40, 30))
    }
}
