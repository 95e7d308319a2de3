import Foundation
#if canImport(Glibc)
import Glibc
#endif
import GRDB
#if canImport(GRDBSQLite)
import GRDBSQLite
#else
import SQLite3
#endif
import SwoopKit

// Reads: a record by id or key, the unfinished ones naming files, and the daemon's lists and counts.

extension SQLiteDownloadStore {
    public func find(url: String, directory: String, requestedName: String) throws -> DownloadRecord? {
        try read { db in
            let statement = try db.cachedStatement(sql: "\(Row.select) WHERE url = ? AND directory = ? AND requestedName = ?")
            return try Row.fetchOne(statement, arguments: [url, directory, requestedName])?.record
        }
    }

    /// The lookups as a few `IN` queries in one read transaction (see ``select(in:values:)``).
    public func find(_ keys: [DownloadKey]) throws -> [DownloadRecord] {
        let found = try select(in: "url", values: keys.map(\.url))
        // Matched byte for byte, as SQLite matches them: a name in another Unicode normalization
        // (é as one code point or two) is another file to the file system.
        let byKey = Dictionary(found.map { (ExactKey($0.key), $0) }, uniquingKeysWith: { a, _ in a })
        return keys.compactMap { byKey[ExactKey($0)] }
    }

    /// A key compared by its bytes (Swift's `String` equality is canonical equivalence).
    private struct ExactKey: Hashable {
        let url: [UInt8], directory: [UInt8], requestedName: [UInt8]

        init(_ key: DownloadKey) {
            (url, directory, requestedName) = (Array(key.url.utf8), Array(key.directory.utf8), Array(key.requestedName.utf8))
        }
    }

    public func unfinished(directory: String, fileNames: [String]) throws -> [DownloadRecord] {
        try select(in: "fileName", values: fileNames, where: "directory = ? AND state NOT IN ('completed', 'removed')", [directory])
    }

    /// The records whose `column` is one of `values` (and that meet `condition`, with its
    /// `arguments`), in chunks of one query each: one cursor per chunk, for GRDB sets up a cursor's
    /// column names each time, which one query per value paid a thousand times for a page of
    /// `tellWaiting`. Each value is asked once, told apart by its bytes as SQLite tells them apart.
    func select(in column: String, values: [String], where condition: String = "1", _ arguments: [String] = []) throws -> [DownloadRecord] {
        var seen = Set<[UInt8]>()
        let values = values.filter { seen.insert(Array($0.utf8)).inserted }
        guard !values.isEmpty else { return [] }
        let chunk = 500
        return try read { db in
            var found: [DownloadRecord] = []
            try db.inTransaction(.deferred) {
                for start in stride(from: 0, to: values.count, by: chunk) {
                    let part = values[start..<min(values.count, start + chunk)]
                    let marks = Array(repeating: "?", count: part.count).joined(separator: ",")
                    let sql = "\(Row.select) WHERE \(condition) AND \(column) IN (\(marks))"
                    // Only the full chunk's statement is worth keeping prepared.
                    let statement = part.count == chunk ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
                    found += try Row.fetchAll(statement, arguments: StatementArguments(arguments + Array(part))).map(\.record)
                }
                return .commit
            }
            return found
        }
    }

    public func unfinished(directory: String, fileName: String) throws -> DownloadRecord? {
        try read { db in
            let statement = try db.cachedStatement(
                sql: "\(Row.select) WHERE directory = ? AND fileName = ? AND state NOT IN ('completed', 'removed') LIMIT 1"
            )
            return try Row.fetchOne(statement, arguments: [directory, fileName])?.record
        }
    }

    public func record(id: Download.ID) throws -> DownloadRecord? {
        try read { db in
            // Stepped with SQLite's own API (see `Row.init(sqliteStatement:)`): every download reads
            // its record this way as it starts.
            let statement = try db.cachedStatement(sql: Row.selectByID)
            defer { sqlite3_reset(statement.sqliteStatement) }
            try db.bind(statement) { $0.bind(id.rawValue) }
            switch sqlite3_step(statement.sqliteStatement) {
            case SQLITE_ROW:
                return Row(sqliteStatement: statement.sqliteStatement).record
            case SQLITE_DONE:
                return nil
            case let code:
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: db.lastErrorMessage, sql: statement.sql)
            }
        }
    }

    public func all() throws -> [DownloadRecord] {
        try read { db in
            try Row.fetchAll(db.cachedStatement(sql: "\(Row.select) ORDER BY priority DESC, position, createdAt, rowid")).map(\.record)
        }
    }

    public func records(ids: [Download.ID]) throws -> [DownloadRecord] {
        let byID = Dictionary(try select(in: "id", values: ids.map(\.rawValue)).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        return ids.compactMap { byID[$0] }
    }

    public func records(in states: Set<Download.State>) throws -> [DownloadRecord] {
        let list = states.map { "'\($0.rawValue)'" }.sorted().joined(separator: ", ")
        return try read { db in
            try Row.fetchAll(db.cachedStatement(sql: "\(Row.select) WHERE state IN (\(list)) ORDER BY priority DESC, position, createdAt, rowid"))
                .map(\.record)
        }
    }

    public func ids() throws -> [Download.ID] {
        try read { db in try String.fetchAll(db.cachedStatement(sql: "SELECT id FROM download")).map(Download.ID.init) }
    }

    public func counts() throws -> [Download.State: Int] {
        try read { db in
            var counts: [Download.State: Int] = [:]
            let rows = try GRDB.Row.fetchAll(db.cachedStatement(sql: "SELECT state, COUNT(*) FROM download GROUP BY state"))
            for row in rows {
                if let state = Download.State(rawValue: row[0]) { counts[state] = row[1] }
            }
            return counts
        }
    }
}
