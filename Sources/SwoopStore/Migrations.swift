import GRDB
import SwoopKit

/// The state database's schema: the steps it took as Swoop shipped them, one named migration after
/// another. A step that has shipped never changes: a change is a new step appended at the end.
///
/// The steps are merged into the last one (GRDB's merged migration): a new database is made in its
/// latest shape at once (``createLatest(_:)``, one transaction instead of one per step, 2.9 ms
/// less to a first `swoop get`); a database made by an earlier version runs the steps it lacks, in
/// order. Both give the same schema, to the text SQLite keeps of it.
extension SQLiteDownloadStore {
    /// One step of the schema, named as it shipped.
    struct SchemaStep: Sendable {
        let identifier: String
        let run: @Sendable (Database) throws -> Void
    }

    static var migrator: DatabaseMigrator {
        merged(schemaSteps, createLatest: createLatest)
    }

    /// `steps` merged into the last: a database with none of them applied is made by
    /// `createLatest`; one with some runs those after the last one applied. (A database made by a
    /// merged migrator records only the step that was last then: everything before it is applied.)
    static func merged(_ steps: [SchemaStep], createLatest: @escaping @Sendable (Database) throws -> Void) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        let last = steps[steps.count - 1]
        migrator.registerMigration(last.identifier, merging: Set(steps.dropLast().map(\.identifier))) { db, applied in
            guard let lastApplied = steps.lastIndex(where: { applied.contains($0.identifier) }) else {
                return try createLatest(db)
            }
            for step in steps[(lastApplied + 1)...] { try step.run(db) }
        }
        return migrator
    }

    /// Every step as a migration of its own, as versions before the merge ran them (tests make
    /// databases of those versions with it).
    static var stepByStepMigrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for step in schemaSteps { migrator.registerMigration(step.identifier, migrate: step.run) }
        return migrator
    }

    /// A new database in the latest shape: the steps that shape an empty database, without those
    /// that rebuilt or renumbered what earlier ones made (v1–v4's table, v6's ids, v9's controls).
    /// The columns v5, v8 and v10 added are made with the table (five statements instead of nine:
    /// SQLite re-reads the whole schema after each, and an `ALTER TABLE` rewrites it).
    static func createLatest(_ db: Database) throws {
        try createDownloadTable(db, named: "download", withLaterColumns: true, stateCheckByComparisons: true)
        try createDownloadIndexes(db)
        try addStateIndex(db)
        try createControlTable(db)
    }

    /// The download table as v4 made it (v5, v8 and v10 added columns); `withLaterColumns` makes
    /// it with those too, in the text SQLite keeps after their `ALTER TABLE`s (SchemaTests compares);
    /// `stateCheckByComparisons` checks the state as v11 does.
    private static func createDownloadTable(
        _ db: Database, named name: String, withLaterColumns: Bool = false, stateCheckByComparisons: Bool = false
    ) throws {
        try db.create(table: name) { t in
            t.primaryKey("id", .text)
            t.column("url", .text).notNull()
            t.column("directory", .text).notNull()
            t.column("requestedName", .text).notNull()
            t.column("fileName", .text)
            let states = ["waiting", "active", "paused", "interrupted", "completed", "failed", "removed"]
            t.column("state", .text).notNull()
                .check { state in
                    stateCheckByComparisons
                        ? states.dropFirst().reduce(state == states[0]) { $0 || state == $1 } : states.contains(state)
                }
            t.column("totalBytes", .integer).check { $0 == nil || $0 >= 0 }
            t.column("committedBytes", .integer).notNull().check { $0 >= 0 }
            t.column("syncedBytes", .integer).notNull().check { $0 >= 0 }
            t.column("bootID", .text).notNull()
            t.column("etag", .text)
            t.column("lastModified", .text)
            t.column("finalSize", .integer)
            t.column("finalModified", .double)
            t.column("checksum", .text)
            t.column("lastError", .text)
            t.column("createdAt", .double).notNull()
            t.column("updatedAt", .double).notNull()
            t.column("headers", .text).notNull().defaults(to: "[]")
            t.column("collisionPolicy", .text).notNull().defaults(to: CollisionPolicy.rename.rawValue)
            t.column("priority", .integer).notNull().defaults(to: 0)
            t.column("position", .integer).notNull().defaults(to: 0)
            t.column("bytesPerSecond", .double).notNull().defaults(to: 0)
            t.column("segments", .text)
            t.column("settings", .text).notNull().defaults(to: "{}")
            if withLaterColumns {
                t.column("mirrors", .text).notNull().defaults(to: "[]")
                t.column("lastErrorCode", .text)
                t.column("movedFrom", .text)
            }
            t.uniqueKey(["url", "directory", "requestedName"])
        }
    }

    private static func createDownloadIndexes(_ db: Database) throws {
        try db.create(index: "download_queue", on: "download", columns: ["priority", "position"])
        try db.create(index: "download_file", on: "download", columns: ["directory", "fileName"])
    }

    /// The controls as v9 made them: one row per request, answered by the process that runs it.
    private static func createControlTable(_ db: Database) throws {
        try db.create(table: "control") { t in
            t.primaryKey("token", .text)
            t.column("id", .text).notNull()
            t.column("request", .text).notNull()
            t.column("postedAt", .double).notNull()
            t.column("answerCode", .text)
            t.column("answerMessage", .text)
        }
    }

    /// v5: a download's other sources.
    private static func addMirrors(_ db: Database) throws {
        try db.alter(table: "download") { t in
            t.add(column: "mirrors", .text).notNull().defaults(to: "[]")
        }
    }

    /// v7: a daemon lists its paused and stopped downloads, and counts them, often.
    private static func addStateIndex(_ db: Database) throws {
        try db.create(index: "download_state", on: "download", columns: ["state"])
    }

    /// v8: what kind of error the last one was, for aria2's errorCode after a restart.
    private static func addErrorCode(_ db: Database) throws {
        try db.alter(table: "download") { t in
            t.add(column: "lastErrorCode", .text)
        }
    }

    /// v10: a download moved to another URL keeps the URL its saved bytes came from until the new
    /// one proves it serves their file, across pauses and restarts.
    private static func addMovedFrom(_ db: Database) throws {
        try db.alter(table: "download") { t in
            t.add(column: "movedFrom", .text)
        }
    }

    /// v11: the state's CHECK as comparisons, not `IN (…)`. For a list of more than two values
    /// SQLite builds an ephemeral table at every run of a statement that writes the state: every
    /// insert of a new download and every update (a fifth of the update that completes a small
    /// file, measured in memory). SQLite cannot change a CHECK constraint: the table is rebuilt as
    /// its documentation prescribes (create, copy with the rowids, which order the queue's ties;
    /// drop, rename, the indexes again).
    private static func checkStateByComparisons(_ db: Database) throws {
        try createDownloadTable(db, named: "download_v11", withLaterColumns: true, stateCheckByComparisons: true)
        let columns = try db.columns(in: "download").map(\.name).joined(separator: ", ")
        try db.execute(sql: "INSERT INTO download_v11 (rowid, \(columns)) SELECT rowid, \(columns) FROM download")
        try db.drop(table: "download")
        try db.rename(table: "download_v11", to: "download")
        try createDownloadIndexes(db)
        try addStateIndex(db)
    }

    static let schemaSteps: [SchemaStep] = [
        SchemaStep(identifier: "v1: downloads") { db in
            try db.create(table: "download") { t in
                t.primaryKey("id", .text)
                t.column("url", .text).notNull()
                t.column("directory", .text).notNull()
                t.column("requestedName", .text).notNull()
                t.column("fileName", .text)
                t.column("state", .text).notNull()
                    .check { ["waiting", "active", "paused", "completed", "failed", "removed"].contains($0) }
                t.column("totalBytes", .integer).check { $0 == nil || $0 >= 0 }
                t.column("committedBytes", .integer).notNull().check { $0 >= 0 }
                t.column("syncedBytes", .integer).notNull().check { $0 >= 0 }
                t.column("bootID", .text).notNull()
                t.column("etag", .text)
                t.column("lastModified", .text)
                t.column("finalSize", .integer)
                t.column("finalModified", .double)
                t.column("checksum", .text)
                t.column("lastError", .text)
                // Seconds since 1970: GRDB's Date text format goes through DateFormatter (ICU), too
                // slow for the checkpoint path.
                t.column("createdAt", .double).notNull()
                t.column("updatedAt", .double).notNull()
                t.uniqueKey(["url", "directory", "requestedName"])
            }
        },
        SchemaStep(identifier: "v2: queue and request options") { db in
            try db.alter(table: "download") { t in
                t.add(column: "headers", .text).notNull().defaults(to: "[]")
                t.add(column: "collisionPolicy", .text).notNull().defaults(to: CollisionPolicy.rename.rawValue)
                t.add(column: "priority", .integer).notNull().defaults(to: 0)
                t.add(column: "position", .integer).notNull().defaults(to: 0)
                t.add(column: "bytesPerSecond", .double).notNull().defaults(to: 0)
            }
            try createDownloadIndexes(db)
        },
        SchemaStep(identifier: "v3: segments") { db in
            try db.alter(table: "download") { t in
                t.add(column: "segments", .text)
            }
        },
        SchemaStep(identifier: "v4: interrupted, settings and controls") { db in
            // SQLite cannot change a CHECK constraint: the table is rebuilt with the new state
            // (`interrupted`) allowed and the settings column added, as SQLite's documentation
            // prescribes (create, copy, drop, rename). Existing `paused` downloads stay paused.
            try createDownloadTable(db, named: "download_v4")
            let copied = [
                "id", "url", "directory", "requestedName", "fileName", "state", "totalBytes", "committedBytes",
                "syncedBytes", "bootID", "etag", "lastModified", "finalSize", "finalModified", "checksum", "lastError",
                "createdAt", "updatedAt", "headers", "collisionPolicy", "priority", "position", "bytesPerSecond", "segments",
            ].joined(separator: ", ")
            try db.execute(sql: "INSERT INTO download_v4 (\(copied)) SELECT \(copied) FROM download")
            try db.drop(table: "download")
            try db.rename(table: "download_v4", to: "download")
            try createDownloadIndexes(db)
            // Requests to the process transferring a download (`DownloadControl`): a table of their
            // own, so that watching them reads a few rows, not the downloads.
            try db.create(table: "control") { t in
                t.primaryKey("id", .text)
                t.column("request", .text).notNull()
                t.column("postedAt", .double).notNull()
            }
        },
        SchemaStep(identifier: "v5: mirrors", run: addMirrors),
        SchemaStep(identifier: "v6: aria2-style ids") { db in
            // Ids become GIDs (16 hex digits of a random non-zero 64-bit value), as aria2's clients
            // expect; a download made before keeps everything but its id. Posted controls follow.
            var taken = Set(try String.fetchAll(db, sql: "SELECT id FROM download").filter(Download.ID.isGID))
            for old in try String.fetchAll(db, sql: "SELECT id FROM download") where !Download.ID.isGID(old) {
                var gid = Download.ID.make().rawValue
                while !taken.insert(gid).inserted { gid = Download.ID.make().rawValue }
                try db.execute(sql: "UPDATE download SET id = ? WHERE id = ?", arguments: [gid, old])
                try db.execute(sql: "UPDATE control SET id = ? WHERE id = ?", arguments: [gid, old])
            }
        },
        SchemaStep(identifier: "v7: state index", run: addStateIndex),
        SchemaStep(identifier: "v8: error codes", run: addErrorCode),
        SchemaStep(identifier: "v9: answered controls") { db in
            // v4 shipped with one control per download and no answers; `PostedControl` needs one row
            // per request, answered by the process that runs it. Controls are requests of the moment
            // (their callers wait seconds at most): the table is made anew. (A store made while v4
            // already held this shape keeps it.)
            guard try !db.columns(in: "control").contains(where: { $0.name == "token" }) else { return }
            try db.drop(table: "control")
            try createControlTable(db)
        },
        SchemaStep(identifier: "v10: moved from", run: addMovedFrom),
        SchemaStep(identifier: "v11: state checked by comparisons", run: checkStateByComparisons),
    ]
}
