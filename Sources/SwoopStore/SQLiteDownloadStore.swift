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

/// The durable ``DownloadStore``: one SQLite database in WAL mode, shared safely by several Swoop
/// processes (readers in other processes never block the writer).
///
/// One connection (a `DatabaseQueue`) per process is enough: the engine's reads and writes are
/// small and brief, and a pool's extra reader connections would only cost memory.
public final class SQLiteDownloadStore: DownloadStore {
    private let database: DatabaseQueue
    /// The database file's path.
    public let path: String
    /// The write-ahead log, kept open to flush durable commits.
    private let log: WriteAheadLog
    private let logSync: GroupSync

    /// Opens (creating if needed) the database at `path` and migrates it.
    ///
    /// - Throws: ``SwoopError/Code/store`` naming the path when it cannot be opened.
    public init(path: String) throws {
        self.path = path
        let log = WriteAheadLog(databasePath: path)
        self.log = log
        self.logSync = GroupSync { try log.flush() }
        var configuration = GRDB.Configuration()
        configuration.busyMode = .timeout(10)
        configuration.journalMode = .wal
        configuration.prepareDatabase { db in
            // WAL commits without fsync: checkpoints cost no flush, and a durable save flushes the
            // log itself afterwards (`makeDurable`), shared with the saves that arrive meanwhile.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        // Private to its user whatever the directory's mode (it keeps -H headers, which may hold
        // credentials); SQLite gives the -wal and -shm files the database's mode.
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 {
            fchmod(fd, 0o600)
            Glibc.close(fd)
        }
        do {
            // Processes that open a new database at once would each switch it to WAL (one then
            // finds it locked) and each make its tables (one then finds them made): one at a time.
            let opening = try Self.lockOpening(path)
            defer { Glibc.close(opening) }
            database = try DatabaseQueue(path: path, configuration: configuration)
            try Self.refuseNewerSchema(database)
            try Self.migrator.migrate(database)
        } catch {
            throw SwoopError(.store, "cannot open the state database \(path): \(error)", cause: error)
        }
    }

    /// Refuses a store that a newer swoop stepped beyond the steps this one knows. Migrated as it
    /// is, it would be taken for an empty one (a merged step records only the last step applied)
    /// and fail on SQL; an older version met a store of this one so.
    static func refuseNewerSchema(_ database: DatabaseQueue) throws {
        let known = Set(schemaSteps.map(\.identifier))
        let unknown = try database.read { try migrator.appliedIdentifiers($0) }.subtracting(known)
        guard let newest = unknown.sorted().last else { return }
        throw SwoopError(
            .store, "it was made by a newer swoop (its schema has the step \"\(newest)\", which this swoop does not know): use that version, or another state directory"
        )
    }

    /// Takes the lock that makes opening and migrating the database at `path` one process at a
    /// time (`flock` of `PATH.lock`, waited for: the others' turns take milliseconds). Returns the
    /// descriptor whose closing lets it go.
    private static func lockOpening(_ path: String) throws -> Int32 {
        let lockPath = path + ".lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SwoopError.fileSystem("create", path: lockPath, errno: errno) }
        while flock(fd, LOCK_EX) != 0 {
            let code = errno
            guard code == EINTR else {
                Glibc.close(fd)
                throw SwoopError.fileSystem("lock", path: lockPath, errno: code)
            }
        }
        return fd
    }

    /// Opens `swoop.sqlite` in `directory`, creating the directory.
    public convenience init(directory: String) throws {
        try FileSystem.createDirectories(directory, what: "state directory")
        try self.init(path: Self.path(in: directory))
    }

    /// The database's path in a state directory.
    public static func path(in directory: String) -> String {
        (directory as NSString).appendingPathComponent("swoop.sqlite")
    }

    /// `$XDG_STATE_HOME/swoop`, else `~/.local/state/swoop`.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return (state as NSString).appendingPathComponent("swoop")
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return (home as NSString).appendingPathComponent(".local/state/swoop")
    }

    /// Saves durably: a state change such as a restart from zero must not be rolled back by a
    /// power loss while the part file already holds new bytes. The commit itself is cheap (WAL,
    /// `synchronous = NORMAL`); the log is then flushed by a ``GroupSync``, so downloads finishing
    /// together share one `fsync`. Checkpoints stay cheap: losing one only costs re-downloading a little.
    public func save(_ record: DownloadRecord) throws {
        try write { db in try db.run(db.cachedStatement(sql: Row.upsertSQL), binding: Row(record).bindAll) }
        try makeDurable()
    }

    /// Saves many records in one durable transaction: one fsync for a whole batch.
    /// Another process that added a download of the same key since the batch was read, or changed
    /// one `expecting` names, fails it whole (``SwoopError/keyTaken(_:)``): two `swoop get` started
    /// at once on one state directory.
    public func save(contentsOf records: [DownloadRecord], expecting: [Download.ID: DownloadRecord.Version]) throws {
        guard !records.isEmpty else { return }
        do {
            try write { db in
                try db.inTransaction {
                    // One prepared statement for the batch (two when some are expected as read).
                    let statement = try db.cachedStatement(sql: Row.upsertSQL)
                    for record in records {
                        guard let version = expecting[record.id] else {
                            try db.run(statement, binding: Row(record).bindAll)
                            continue
                        }
                        try db.run(db.cachedStatement(sql: Row.upsertUnchangedSQL)) { values in
                            Row(record).bindAll(&values)
                            values.bind(version.state.rawValue)
                            values.bind(version.fileName)
                            values.bind(version.committedBytes)
                        }
                        // The row is there and changed: no insert, no update.
                        if db.changesCount == 0 {
                            throw SwoopError.changedMeanwhile(record.id)
                        }
                    }
                    return .commit
                }
            }
        } catch let error as SwoopError where (error.cause as? DatabaseError)?.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            throw SwoopError.keyTaken(error)
        } catch let error as SwoopError {
            // A changed record's refusal comes back inside the write's error: it is the one to say.
            if let changed = error.cause as? SwoopError, changed.isRetryable { throw changed }
            throw error
        }
        try makeDurable()
    }

    /// A non-durable save commits without fsync: it survives a process crash, not necessarily a
    /// power loss.
    public func save(_ record: DownloadRecord, durable: Bool) throws {
        guard !durable else { return try save(record) }
        try write { db in try db.run(db.cachedStatement(sql: Row.upsertSQL), binding: Row(record).bindAll) }
    }

    /// One `UPDATE` of the columns a transfer owns: the key and queue columns (and their indexes)
    /// are not rewritten, as an upsert of the whole row would.
    public func update(_ record: DownloadRecord, durable: Bool) throws {
        let changed = try write { db in
            try db.run(db.cachedStatement(sql: Row.updateSQL), binding: Row(record).bindUpdate)
            return db.changesCount
        }
        guard changed > 0 else { throw Self.removedMeanwhile(record, path: path) }
        if durable { try makeDurable() }
    }

    /// The claim's check and write in one `UPDATE … WHERE NOT EXISTS`: the per-file store work of
    /// thousands of small files was a third lighter without the separate lookup. Only when nothing
    /// was written is the owner looked up (or the record found gone).
    public func claim(_ record: DownloadRecord) throws -> DownloadRecord? {
        guard let fileName = record.fileName else {
            try update(record, durable: false)
            return nil
        }
        let row = Row(record)
        // A holder that finishes between the refused write and the lookup frees the name: write again.
        for _ in 0..<3 {
            let changed = try write { db in
                try db.run(db.cachedStatement(sql: Row.claimSQL)) { row.bindClaim(&$0, fileName: fileName) }
                return db.changesCount
            }
            if changed > 0 { return nil }
            if let owner = try holder(of: record) { return owner }
            if try self.record(id: record.id) == nil { break }
        }
        throw Self.removedMeanwhile(record, path: path)
    }

    /// The updates in one transaction and one flush of the log: a group of downloads finishing
    /// together commits once. A claiming record is written by ``Row/claimSQL`` (the check and the
    /// write in one statement). A record that is gone, or whose claim is refused, fails alone; a
    /// failed transaction fails all.
    public func update(contentsOf records: [DownloadRecord], claiming: Set<Download.ID>, durable: Bool) -> [Result<Void, SwoopError>] {
        func write(_ record: DownloadRecord, in db: Database) throws -> Bool {
            if claiming.contains(record.id), let fileName = record.fileName {
                try db.run(db.cachedStatement(sql: Row.claimSQL)) { Row(record).bindClaim(&$0, fileName: fileName) }
            } else {
                try db.run(db.cachedStatement(sql: Row.updateSQL), binding: Row(record).bindUpdate)
            }
            return db.changesCount > 0
        }
        let changed: [Bool]
        do {
            changed = try self.write { db in
                // One statement commits by itself.
                guard records.count > 1 else { return try records.map { try write($0, in: db) } }
                var changed: [Bool] = []
                try db.inTransaction {
                    for record in records { changed.append(try write(record, in: db)) }
                    return .commit
                }
                return changed
            }
            if durable { try makeDurable() }
        } catch {
            let failure = Self.storeError(error)
            return records.map { _ in .failure(failure) }
        }
        return zip(records, changed).map { record, changed in
            if changed { return .success(()) }
            // Refused: another unfinished download names the file, or the record is gone.
            if claiming.contains(record.id), let owner = try? holder(of: record) {
                return .failure(.nameTaken(record, by: owner))
            }
            return .failure(Self.removedMeanwhile(record, path: path))
        }
    }

    /// `write` and `makeDurable` throw ``SwoopError``s already; anything else is named a store error.
    static func storeError(_ error: any Error) -> SwoopError {
        error as? SwoopError ?? SwoopError(.store, "cannot write the download state: \(error)", cause: error)
    }

    static func removedMeanwhile(_ record: DownloadRecord, path: String) -> SwoopError {
        SwoopError(.store, "the record of \(record.url) was removed from \(path) meanwhile (by another swoop process?)")
    }

    public func markActive(ids: [Download.ID], at date: Date) throws {
        try write { db in
            try db.inTransaction {
                let statement = try db.cachedStatement(sql: "UPDATE download SET state = 'active', updatedAt = ? WHERE id = ? AND state = 'waiting'")
                for id in ids { try statement.execute(arguments: [date.timeIntervalSince1970, id.rawValue]) }
                return .commit
            }
        }
    }

    /// Deletes many records in one transaction.
    public func delete(ids: [Download.ID]) throws {
        try write { db in
            try db.inTransaction {
                let statement = try db.cachedStatement(sql: "DELETE FROM download WHERE id = ?")
                let control = try db.cachedStatement(sql: "DELETE FROM control WHERE id = ?")
                for id in ids {
                    try statement.execute(arguments: [id.rawValue])
                    try control.execute(arguments: [id.rawValue])
                }
                return .commit
            }
        }
    }

    /// A segmented download's checkpoint: its segments as JSON and their sums, in one statement.
    public func checkpoint(id: Download.ID, segments: [Segment], bootID: String, bytesPerSecond: Double) throws {
        let json = Row.encode(segments)
        try write { db in
            let statement = try db.cachedStatement(
                sql: "UPDATE download SET segments = ?, committedBytes = ?, syncedBytes = ?, bootID = ?, bytesPerSecond = ?, updatedAt = ? WHERE id = ?"
            )
            try statement.execute(arguments: [
                json, segments.reduce(0) { $0 + $1.written }, segments.reduce(0) { $0 + $1.synced }, bootID, bytesPerSecond,
                Date().timeIntervalSince1970, id.rawValue,
            ])
        }
    }

    public func checkpoint(id: Download.ID, committedBytes: Int, syncedBytes: Int, bootID: String, bytesPerSecond: Double) throws {
        try write { db in
            let statement = try db.cachedStatement(
                sql: "UPDATE download SET committedBytes = ?, syncedBytes = ?, bootID = ?, bytesPerSecond = ?, updatedAt = ? WHERE id = ?"
            )
            try statement.execute(arguments: [
                committedBytes, syncedBytes, bootID, bytesPerSecond, Date().timeIntervalSince1970, id.rawValue,
            ])
        }
    }

    public func delete(id: Download.ID) throws {
        try delete(ids: [id])
    }

    public var isDurable: Bool { true }

    /// Closes the database connection.
    public func close() throws {
        log.close()
        do {
            try database.close()
        } catch {
            throw SwoopError(.store, "cannot close the state database \(path): \(error)", cause: error)
        }
    }

    /// Runs a read on the one connection without GRDB's read wrapper: `DatabaseQueue.read` toggles
    /// `PRAGMA query_only`, and SQLite expires every prepared statement on such a flag change, so
    /// each read would re-prepare all the cached statements (a third of the store's CPU time with
    /// thousands of small downloads). A lone SELECT needs no explicit transaction.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try database.inDatabase(body)
        } catch {
            throw SwoopError(.store, "cannot read the state database \(path): \(error)", cause: error)
        }
    }

    /// Flushes the write-ahead log, so every commit made before this call survives a power loss:
    /// what `synchronous = FULL` does at each commit, but shared by concurrent callers.
    func makeDurable() throws {
        do {
            try logSync.sync()
        } catch {
            throw SwoopError(.store, "cannot flush the state database \(path): \(error)", cause: error)
        }
    }

    /// Runs a write on the one connection. A lone statement commits by itself (autocommit);
    /// GRDB's `write` would wrap it in `BEGIN`/`COMMIT`, two more statements to parse each time.
    /// Writes of several statements open their own transaction.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try database.writeWithoutTransaction(body)
        } catch {
            throw SwoopError(.store, "cannot write the state database \(path): \(error)", cause: error)
        }
    }
}
