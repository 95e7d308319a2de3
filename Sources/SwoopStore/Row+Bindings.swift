import GRDB
#if canImport(GRDBSQLite)
import GRDBSQLite
#else
import SQLite3
#endif

/// A statement's parameters, bound by position with SQLite's own calls. GRDB's
/// `StatementArguments` boxes every value and binds it through its generic path: for the insert of
/// a new download (28 values) and the update that completes it (19 to 22), building and binding
/// the arguments took about 35,000 instructions a download, a twentieth of all `swoop get -i` did
/// per small file. The statements stay GRDB's (prepared once, cached); only the binding and the
/// stepping are done here (see ``GRDB/Database/run(_:binding:)``).
struct Bindings {
    private let statement: SQLiteStatement
    /// The last parameter bound (SQLite counts from 1).
    private(set) var count: Int32 = 0
    /// The first binding SQLite refused, if any.
    private(set) var failure: Int32 = SQLITE_OK

    fileprivate init(_ statement: SQLiteStatement) {
        self.statement = statement
    }

    mutating func bind(_ text: String?) {
        count += 1
        guard var text else { return check(sqlite3_bind_null(statement, count)) }
        let index = count
        let code = text.withUTF8 { bytes in
            guard let start = bytes.baseAddress else {
                // A null pointer would bind NULL, not the empty text.
                return sqlite3_bind_text(statement, index, "", 0, sqliteTransient)
            }
            return sqlite3_bind_text(
                statement, index, UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self), Int32(bytes.count), sqliteTransient
            )
        }
        check(code)
    }

    mutating func bind(_ integer: Int?) {
        count += 1
        check(integer.map { sqlite3_bind_int64(statement, count, Int64($0)) } ?? sqlite3_bind_null(statement, count))
    }

    mutating func bind(_ real: Double?) {
        count += 1
        check(real.map { sqlite3_bind_double(statement, count, $0) } ?? sqlite3_bind_null(statement, count))
    }

    private mutating func check(_ code: Int32) {
        if code != SQLITE_OK, failure == SQLITE_OK { failure = code }
    }
}

/// SQLite copies the text before the call returns.
private let sqliteTransient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

extension Database {
    /// Runs a cached write statement (`cachedStatement(sql:)`) with the values `bind` gives, by
    /// position, stepping it with SQLite's own calls. For the store's hot writes only: GRDB's
    /// database observation does not see the statement (the store has no observers), and a
    /// statement that fails stays cached (a statement prepared with `sqlite3_prepare_v3` runs again
    /// after its reset). Every parameter must be bound, or it throws without running.
    func run(_ statement: Statement, binding bind: (inout Bindings) -> Void) throws {
        let raw = statement.sqliteStatement
        defer { sqlite3_reset(raw) }
        try self.bind(statement, bind)
        while true {
            switch sqlite3_step(raw) {
            case SQLITE_DONE:
                return
            case SQLITE_ROW:
                continue
            case let code:
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: lastErrorMessage, sql: statement.sql)
            }
        }
    }

    /// Resets a cached statement and binds the values `bind` gives, by position, with SQLite's own
    /// calls (``Bindings``): for ``run(_:binding:)``, and for the read each download makes as it
    /// starts. Throws when SQLite refuses a value or a parameter is left unbound.
    func bind(_ statement: Statement, _ bind: (inout Bindings) -> Void) throws {
        let raw = statement.sqliteStatement
        sqlite3_reset(raw)
        var bindings = Bindings(raw)
        bind(&bindings)
        guard bindings.failure == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: bindings.failure), message: lastErrorMessage, sql: statement.sql)
        }
        guard bindings.count == sqlite3_bind_parameter_count(raw) else {
            throw DatabaseError(
                resultCode: .SQLITE_MISUSE,
                message: "\(bindings.count) values bound for \(sqlite3_bind_parameter_count(raw)) parameters", sql: statement.sql
            )
        }
    }
}

extension Row {
    /// The values of ``columns``, in that order (``upsertSQL``).
    func bindAll(_ values: inout Bindings) {
        values.bind(id)
        values.bind(url)
        values.bind(directory)
        values.bind(requestedName)
        bindFileThroughPolicy(&values)
        values.bind(priority)
        values.bind(position)
        values.bind(bytesPerSecond)
        values.bind(segments)
        values.bind(settings)
        values.bind(mirrors)
        values.bind(createdAt)
        values.bind(updatedAt)
        values.bind(lastErrorCode)
        values.bind(movedFrom)
    }

    /// The values of ``updateColumns``, in that order, then the id (``updateSQL``).
    func bindUpdate(_ values: inout Bindings) {
        bindFileThroughPolicy(&values)
        values.bind(bytesPerSecond)
        values.bind(segments)
        values.bind(updatedAt)
        values.bind(lastErrorCode)
        values.bind(movedFrom)
        values.bind(id)
    }

    /// ``bindUpdate(_:)``'s values, then the directory and the file name (``claimSQL``).
    func bindClaim(_ values: inout Bindings, fileName: String) {
        bindUpdate(&values)
        values.bind(directory)
        values.bind(fileName)
    }

    /// From `fileName` to `collisionPolicy`: the same run of columns in ``columns`` and ``updateColumns``.
    private func bindFileThroughPolicy(_ values: inout Bindings) {
        values.bind(fileName)
        values.bind(state)
        values.bind(totalBytes)
        values.bind(committedBytes)
        values.bind(syncedBytes)
        values.bind(bootID)
        values.bind(etag)
        values.bind(lastModified)
        values.bind(finalSize)
        values.bind(finalModified)
        values.bind(checksum)
        values.bind(lastError)
        values.bind(headers)
        values.bind(collisionPolicy)
    }
}
