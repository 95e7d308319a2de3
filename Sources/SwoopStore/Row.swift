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

/// The `download` table's row.
struct Row: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "download"

    var id: String
    var url: String
    var directory: String
    var requestedName: String
    var fileName: String?
    var state: String
    var totalBytes: Int?
    var committedBytes: Int
    var syncedBytes: Int
    var bootID: String
    var etag: String?
    var lastModified: String?
    var finalSize: Int?
    var finalModified: Double?
    var checksum: String?
    var lastError: String?
    var headers: String
    var collisionPolicy: String
    var priority: Int
    var position: Int
    var bytesPerSecond: Double
    var segments: String?
    var settings: String
    var mirrors: String
    var createdAt: Double
    var updatedAt: Double
    var lastErrorCode: String?
    var movedFrom: String?

    /// Reads a row selected by ``select`` by column position: GRDB's lookup by name compares names
    /// case-insensitively for every column, a measurable cost on the per-download lookups.
    init(row: GRDB.Row) throws {
        id = row[0]
        url = row[1]
        directory = row[2]
        requestedName = row[3]
        fileName = row[4]
        state = row[5]
        totalBytes = row[6]
        committedBytes = row[7]
        syncedBytes = row[8]
        bootID = row[9]
        etag = row[10]
        lastModified = row[11]
        finalSize = row[12]
        finalModified = row[13]
        checksum = row[14]
        lastError = row[15]
        headers = row[16]
        collisionPolicy = row[17]
        priority = row[18]
        position = row[19]
        bytesPerSecond = row[20]
        segments = row[21]
        settings = row[22]
        mirrors = row[23]
        createdAt = row[24]
        updatedAt = row[25]
        lastErrorCode = row[26]
        movedFrom = row[27]
    }

    /// Reads the row a statement selecting ``columns`` (``select``) stands on, by position, with
    /// SQLite's own accessors: GRDB's row cursor builds a dictionary of the lowercased column names
    /// for every fetch and copies the row, which was most of the cost of the read each download makes
    /// as it starts (`SQLiteDownloadStore.record(id:)`, 2,000 small files). A value of another
    /// storage class is converted as SQLite converts it (a record edited on disk reads, it does not trap).
    init(sqliteStatement statement: SQLiteStatement) {
        func text(_ index: Int32) -> String? {
            guard sqlite3_column_type(statement, index) != SQLITE_NULL, let bytes = sqlite3_column_text(statement, index) else { return nil }
            return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, index))), as: UTF8.self)
        }
        func integer(_ index: Int32) -> Int? {
            sqlite3_column_type(statement, index) == SQLITE_NULL ? nil : Int(sqlite3_column_int64(statement, index))
        }
        func real(_ index: Int32) -> Double? {
            sqlite3_column_type(statement, index) == SQLITE_NULL ? nil : sqlite3_column_double(statement, index)
        }
        id = text(0) ?? ""
        url = text(1) ?? ""
        directory = text(2) ?? ""
        requestedName = text(3) ?? ""
        fileName = text(4)
        state = text(5) ?? ""
        totalBytes = integer(6)
        committedBytes = integer(7) ?? 0
        syncedBytes = integer(8) ?? 0
        bootID = text(9) ?? ""
        etag = text(10)
        lastModified = text(11)
        finalSize = integer(12)
        finalModified = real(13)
        checksum = text(14)
        lastError = text(15)
        headers = text(16) ?? "[]"
        collisionPolicy = text(17) ?? ""
        priority = integer(18) ?? 0
        position = integer(19) ?? 0
        bytesPerSecond = real(20) ?? 0
        segments = text(21)
        settings = text(22) ?? "{}"
        mirrors = text(23) ?? "[]"
        createdAt = real(24) ?? 0
        updatedAt = real(25) ?? 0
        lastErrorCode = text(26)
        movedFrom = text(27)
    }

    static func encode(_ segments: [Segment]) -> String? {
        (try? encoder.encode(segments)).flatMap { String(data: $0, encoding: .utf8) }
    }

    /// Settings as JSON; none set is `{}`.
    static func encode(_ settings: DownloadSettings) -> String {
        json(settings, isEmpty: settings.isEmpty, empty: "{}")
    }

    /// `value` as JSON text, `empty` for an empty value (the common case: no encoder run).
    private static func json<T: Encodable>(_ value: T, isEmpty: Bool, empty: String) -> String {
        isEmpty ? empty : (try? encoder.encode(value)).flatMap { String(data: $0, encoding: .utf8) } ?? empty
    }

    /// What JSON text holds, or `fallback` for the `empty` text or text that cannot be read. What
    /// the JSON columns hold only says how a download is asked for (headers, settings, mirrors),
    /// never which bytes it keeps, so an unreadable one falls back rather than failing the read.
    private static func decoded<T: Decodable>(_ text: String, empty: String, fallback: T) -> T {
        text == empty ? fallback : (try? decoder.decode(T.self, from: Data(text.utf8))) ?? fallback
    }

    static let columns = [
        "id", "url", "directory", "requestedName", "fileName", "state", "totalBytes", "committedBytes", "syncedBytes",
        "bootID", "etag", "lastModified", "finalSize", "finalModified", "checksum", "lastError", "headers",
        "collisionPolicy", "priority", "position", "bytesPerSecond", "segments", "settings", "mirrors",
        "createdAt", "updatedAt", "lastErrorCode", "movedFrom",
    ]

    /// `SELECT` of `columns`, in that order (what ``init(row:)`` reads by position), from the table.
    static let select = "SELECT \(columns.joined(separator: ", ")) FROM download"

    /// ``select`` of one record by id.
    static let selectByID = "\(select) WHERE id = ?"

    /// Insert or update by id. Another record with the same (url, directory, requestedName) is a
    /// conflict that fails the batch, never a silent replacement.
    static let upsertSQL =
        "INSERT INTO download (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
        + " ON CONFLICT(id) DO UPDATE SET \(columns.dropFirst().map { "\($0) = excluded.\($0)" }.joined(separator: ", "))"

    /// ``upsertSQL`` that replaces a stored row only while its state, file name and recorded bytes
    /// are the three values bound after the row's (``DownloadRecord/Version``).
    static let upsertUnchangedSQL = upsertSQL
        + " WHERE download.state = ? AND download.fileName IS ? AND download.committedBytes = ?"

    /// The columns a transfer changes: not the key (`url`, `directory`, `requestedName`), the queue
    /// place (`priority`, `position`), the download's `settings` and `mirrors`, or `createdAt`.
    static let updateColumns = [
        "fileName", "state", "totalBytes", "committedBytes", "syncedBytes", "bootID", "etag", "lastModified", "finalSize",
        "finalModified", "checksum", "lastError", "headers", "collisionPolicy", "bytesPerSecond", "segments", "updatedAt", "lastErrorCode",
        "movedFrom",
    ]

    static let updateSQL = "UPDATE download SET \(updateColumns.map { "\($0) = ?" }.joined(separator: ", ")) WHERE id = ?"

    /// ``updateSQL`` unless another unfinished record in the directory names the file (values:
    /// ``bindClaim(_:fileName:)``).
    static let claimSQL = updateSQL
        + " AND NOT EXISTS (SELECT 1 FROM download AS other WHERE other.directory = ? AND other.fileName = ?"
        // Two comparisons, not `NOT IN (…)`: SQLite opens an ephemeral table for the list at each run.
        + " AND other.state != 'completed' AND other.state != 'removed' AND other.id != download.id)"

    private static let encoder = JSONEncoder()
    private static let decoder = JSONDecoder()

    init(_ r: DownloadRecord) {
        id = r.id.rawValue
        url = r.url
        directory = r.directory
        requestedName = r.requestedName
        fileName = r.fileName
        state = r.state.rawValue
        totalBytes = r.totalBytes
        committedBytes = r.committedBytes
        syncedBytes = r.syncedBytes
        bootID = r.bootID
        etag = r.etag
        lastModified = r.lastModified
        finalSize = r.finalSize
        finalModified = r.finalModified
        checksum = r.checksum
        lastError = r.lastError
        lastErrorCode = r.lastErrorCode
        movedFrom = r.movedFrom
        headers = Self.json(r.headers, isEmpty: r.headers.isEmpty, empty: "[]")
        collisionPolicy = r.collisionPolicy.rawValue
        priority = r.priority
        position = r.position
        bytesPerSecond = r.bytesPerSecond
        segments = r.segments.flatMap(Self.encode)
        settings = Self.encode(r.settings)
        mirrors = Self.json(r.mirrors, isEmpty: r.mirrors.isEmpty, empty: "[]")
        createdAt = r.createdAt.timeIntervalSince1970
        updatedAt = r.updatedAt.timeIntervalSince1970
    }

    var record: DownloadRecord {
        var r = DownloadRecord(
            id: Download.ID(id), url: url, directory: directory, requestedName: requestedName, bootID: bootID,
            checksum: checksum, now: Date(timeIntervalSince1970: createdAt)
        )
        r.fileName = fileName
        r.state = Download.State(rawValue: state) ?? .failed
        r.totalBytes = totalBytes
        r.committedBytes = committedBytes
        r.syncedBytes = syncedBytes
        r.etag = etag
        r.lastModified = lastModified
        r.finalSize = finalSize
        r.finalModified = finalModified
        r.lastError = lastError
        r.lastErrorCode = lastErrorCode
        r.movedFrom = movedFrom
        r.headers = Self.decoded(headers, empty: "[]", fallback: [])
        r.collisionPolicy = CollisionPolicy(rawValue: collisionPolicy) ?? .rename
        r.priority = priority
        r.position = position
        r.bytesPerSecond = bytesPerSecond
        // Segments that cannot be read are not trusted: the download starts over, never splices.
        r.segments = segments.flatMap { try? Self.decoder.decode([Segment].self, from: Data($0.utf8)) }
        r.settings = Self.decoded(settings, empty: "{}", fallback: DownloadSettings())
        r.mirrors = Self.decoded(mirrors, empty: "[]", fallback: [])
        r.updatedAt = Date(timeIntervalSince1970: updatedAt)
        return r
    }
}
