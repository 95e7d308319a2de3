import GRDB
import SwoopKit

/// The state database's schema, one named migration after another. A migration that has shipped
/// never changes: a change is a new migration appended at the end.
extension SQLiteDownloadStore {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: downloads") { db in
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
        }
        migrator.registerMigration("v2: queue and request options") { db in
            try db.alter(table: "download") { t in
                t.add(column: "headers", .text).notNull().defaults(to: "[]")
                t.add(column: "collisionPolicy", .text).notNull().defaults(to: CollisionPolicy.rename.rawValue)
                t.add(column: "priority", .integer).notNull().defaults(to: 0)
                t.add(column: "position", .integer).notNull().defaults(to: 0)
                t.add(column: "bytesPerSecond", .double).notNull().defaults(to: 0)
            }
            try db.create(index: "download_queue", on: "download", columns: ["priority", "position"])
            try db.create(index: "download_file", on: "download", columns: ["directory", "fileName"])
        }
        migrator.registerMigration("v3: segments") { db in
            try db.alter(table: "download") { t in
                t.add(column: "segments", .text)
            }
        }
        migrator.registerMigration("v4: interrupted, settings and controls") { db in
            // SQLite cannot change a CHECK constraint: the table is rebuilt with the new state
            // (`interrupted`) allowed and the settings column added, as SQLite's documentation
            // prescribes (create, copy, drop, rename). Existing `paused` downloads stay paused.
            try db.create(table: "download_v4") { t in
                t.primaryKey("id", .text)
                t.column("url", .text).notNull()
                t.column("directory", .text).notNull()
                t.column("requestedName", .text).notNull()
                t.column("fileName", .text)
                t.column("state", .text).notNull()
                    .check { ["waiting", "active", "paused", "interrupted", "completed", "failed", "removed"].contains($0) }
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
                t.uniqueKey(["url", "directory", "requestedName"])
            }
            let copied = [
                "id", "url", "directory", "requestedName", "fileName", "state", "totalBytes", "committedBytes",
                "syncedBytes", "bootID", "etag", "lastModified", "finalSize", "finalModified", "checksum", "lastError",
                "createdAt", "updatedAt", "headers", "collisionPolicy", "priority", "position", "bytesPerSecond", "segments",
            ].joined(separator: ", ")
            try db.execute(sql: "INSERT INTO download_v4 (\(copied)) SELECT \(copied) FROM download")
            try db.drop(table: "download")
            try db.rename(table: "download_v4", to: "download")
            try db.create(index: "download_queue", on: "download", columns: ["priority", "position"])
            try db.create(index: "download_file", on: "download", columns: ["directory", "fileName"])
            // Requests to the process transferring a download (`DownloadControl`): a table of their
            // own, so that watching them reads a few rows, not the downloads.
            try db.create(table: "control") { t in
                t.primaryKey("id", .text)
                t.column("request", .text).notNull()
                t.column("postedAt", .double).notNull()
            }
        }
        migrator.registerMigration("v5: mirrors") { db in
            try db.alter(table: "download") { t in
                t.add(column: "mirrors", .text).notNull().defaults(to: "[]")
            }
        }
        migrator.registerMigration("v6: aria2-style ids") { db in
            // Ids become GIDs (16 hex digits of a random non-zero 64-bit value), as aria2's clients
            // expect; a download made before keeps everything but its id. Posted controls follow.
            var taken = Set(try String.fetchAll(db, sql: "SELECT id FROM download").filter(Download.ID.isGID))
            for old in try String.fetchAll(db, sql: "SELECT id FROM download") where !Download.ID.isGID(old) {
                var gid = Download.ID.make().rawValue
                while !taken.insert(gid).inserted { gid = Download.ID.make().rawValue }
                try db.execute(sql: "UPDATE download SET id = ? WHERE id = ?", arguments: [gid, old])
                try db.execute(sql: "UPDATE control SET id = ? WHERE id = ?", arguments: [gid, old])
            }
        }
        migrator.registerMigration("v7: state index") { db in
            // A daemon lists its paused and stopped downloads, and counts them, often.
            try db.create(index: "download_state", on: "download", columns: ["state"])
        }
        migrator.registerMigration("v8: error codes") { db in
            // What kind of error the last one was, for aria2's errorCode after a restart.
            try db.alter(table: "download") { t in
                t.add(column: "lastErrorCode", .text)
            }
        }
        migrator.registerMigration("v9: answered controls") { db in
            // v4 shipped with one control per download and no answers; `PostedControl` needs one row
            // per request, answered by the process that runs it. Controls are requests of the moment
            // (their callers wait seconds at most): the table is made anew. (A store made while v4
            // already held this shape keeps it.)
            guard try !db.columns(in: "control").contains(where: { $0.name == "token" }) else { return }
            try db.drop(table: "control")
            try db.create(table: "control") { t in
                t.primaryKey("token", .text)
                t.column("id", .text).notNull()
                t.column("request", .text).notNull()
                t.column("postedAt", .double).notNull()
                t.column("answerCode", .text)
                t.column("answerMessage", .text)
            }
        }
        migrator.registerMigration("v10: moved from") { db in
            // A download moved to another URL keeps the URL its saved bytes came from until the new
            // one proves it serves their file, across pauses and restarts.
            try db.alter(table: "download") { t in
                t.add(column: "movedFrom", .text)
            }
        }
        return migrator
    }
}
