import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import SwoopKit

/// A fleet's catalogue in PostgreSQL (postgres-nio's `PostgresClient`: a pool of connections, run for
/// the catalogue's life). Queue order, claims and leases are on the database's clock; every write of
/// a claim is fenced by node and epoch; claims take one advisory lock so that the fleet's limits
/// hold; `NOTIFY swoop_changes` wakes idle daemons (``changes()``).
public final class PostgresCatalogue: DownloadCatalogue, Sendable {
    let address: PostgresAddress
    let client: PostgresClient
    let logger: Logger
    private let running: Task<Void, Never>
    /// Node names this catalogue has beaten for: the first beat of each sets its start time.
    let started = NIOLockedValueBox<Set<String>>([])
    /// When claims last looked for leases that ran out, and how often they look.
    let lastExpiryScan = NIOLockedValueBox<ContinuousClock.Instant?>(nil)
    let expiryScan: Duration
    /// The longest a call waits for the database (a connection and the answer).
    let timeout: Duration
    private let closed = NIOLockedValueBox(false)
    /// The tasks listening for ``changes()``, ended by ``close()``.
    private let listeners = NIOLockedValueBox<[UUID: Task<Void, Never>]>([:])

    /// Connects lazily: nothing is asked of the server before the first call (``prepare()`` first).
    /// `logger` hears postgres-nio's own messages (connection attempts: info); by default only warnings.
    public init(_ address: PostgresAddress, logger: Logger? = nil, expiryScan: Duration = .seconds(1), timeout: Duration = .seconds(10)) throws {
        self.address = address
        self.expiryScan = expiryScan
        self.timeout = timeout
        self.logger = logger ?? {
            var logger = Logger(label: "swoop.fleet")
            logger.logLevel = .warning
            return logger
        }()
        let tls = try Self.tls(address)
        var configuration: PostgresClient.Configuration
        if address.isUnixSocket {
            configuration = .init(unixSocketPath: address.socketPath, username: address.user, password: address.password, database: address.database)
        } else {
            configuration = .init(
                host: address.host, port: address.port, username: address.user, password: address.password, database: address.database, tls: tls
            )
        }
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.maximumConnections = 8
        let client = PostgresClient(configuration: configuration, backgroundLogger: self.logger)
        self.client = client
        self.running = Task { await client.run() }
    }

    /// TLS as libpq's `sslmode` means it.
    static func tls(_ address: PostgresAddress) throws -> PostgresClient.Configuration.TLS {
        guard let tls = try tlsConfiguration(address) else { return .disable }
        return address.tlsMode == .prefer ? .prefer(tls) : .require(tls)
    }

    static func tlsConfiguration(_ address: PostgresAddress) throws -> TLSConfiguration? {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let roots = address.rootCertificates { tls.trustRoots = .file(roots) }
        switch address.tlsMode {
        case .disable: return nil
        case .prefer, .require: tls.certificateVerification = .none
        case .verifyCA: tls.certificateVerification = .noHostnameVerification
        case .verifyFull: tls.certificateVerification = .fullVerification
        }
        return tls
    }

    /// One connection of its own, outside the pool: its failure is the reason (refused, a wrong
    /// password), where the pool would keep trying.
    func connectOnce() async throws -> PostgresConnection {
        var configuration: PostgresConnection.Configuration
        if address.isUnixSocket {
            configuration = .init(unixSocketPath: address.socketPath, username: address.user, password: address.password, database: address.database)
        } else {
            let tls: PostgresConnection.Configuration.TLS
            if let settings = try Self.tlsConfiguration(address) {
                let context = try NIOSSLContext(configuration: settings)
                tls = address.tlsMode == .prefer ? .prefer(context) : .require(context)
            } else {
                tls = .disable
            }
            configuration = .init(
                host: address.host, port: address.port, username: address.user, password: address.password, database: address.database, tls: tls
            )
        }
        configuration.options.connectTimeout = .seconds(5)
        return try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 0, logger: logger
        ).get()
    }

    public func close() async {
        closed.withLockedValue { $0 = true }
        for listener in listeners.withLockedValue({ $0.values }) { listener.cancel() }
        running.cancel()
        await running.value
    }

    // MARK: - Schema

    public func prepare() async throws {
        try await prepare(creating: true)
    }

    /// Migrates an older schema; makes the tables when there are none only if `creating` (a
    /// daemon), else says there is no fleet there (a command given the wrong database).
    public func prepare(creating: Bool) async throws {
        // Longer than a call: a migration may wait for another daemon's.
        try await withErrors("opening", timeout: max(timeout, .seconds(60))) { [self] in
            let connection = try await connectOnce()
            do {
                if !creating {
                    var found = false
                    for try await exists in try await connection.query("SELECT to_regclass('swoop_schema') IS NOT NULL", logger: logger).decode(Bool.self) {
                        found = exists
                    }
                    guard found else {
                        throw SwoopError(
                            .notFound,
                            "no fleet at \(address.description): the first `swoop daemon --store` started on a database makes its tables (is the database's name right?)"
                        )
                    }
                }
                try await migrate(connection)
                try await connection.close()
            } catch {
                try? await connection.close()
                throw error
            }
        }
    }

    /// Runs the steps the database lacks, one daemon at a time.
    private func migrate(_ connection: PostgresConnection) async throws {
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(PostgresSchema.migrationLock))", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS swoop_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT clock_timestamp())",
                logger: logger
            )
            var current = 0
            for try await version in try await connection.query("SELECT coalesce(max(version), 0) FROM swoop_schema", logger: logger).decode(Int.self) {
                current = version
            }
            guard current <= PostgresSchema.version else {
                throw SwoopError(
                    .store,
                    "the fleet's store at \(address.description) has schema version \(current), newer than this swoop knows (\(PostgresSchema.version)): upgrade swoop"
                )
            }
            for (index, step) in PostgresSchema.steps.enumerated() where index + 1 > current {
                for statement in step { try await connection.query(statement, logger: logger) }
                try await connection.query("INSERT INTO swoop_schema (version) VALUES (\(index + 1))", logger: logger)
            }
        }
    }

    // MARK: - Queue

    public func add(_ items: [CatalogueItem]) async throws {
        guard !items.isEmpty else { return }
        try await withErrors("adding downloads to") { [self] in
            try await client.withTransaction(logger: logger) { connection in try await insert(items, connection) }
            // Thousands at once: the planner's statistics renewed now, not at autovacuum's next look,
            // so that the claims that follow at once are planned for the table as it is.
            if items.count >= 1000 { try await client.query("ANALYZE swoop_downloads", logger: logger) }
        }
    }

    /// Inserts `items` in their order, and wakes idle nodes when any is to run.
    func insert(_ items: [CatalogueItem], _ connection: PostgresConnection) async throws {
        let urls = try items.map { String(decoding: try JSONEncoder().encode($0.urls), as: UTF8.self) }
        try await connection.query(
            """
            INSERT INTO swoop_downloads (id, urls, host, options, priority, state, parent, part)
            SELECT p.id, ARRAY(SELECT jsonb_array_elements_text(p.urls::jsonb)), p.host, p.options, p.priority, p.state,
                   nullif(p.parent, ''), nullif(p.part, '')
            FROM unnest(\(items.map(\.id.rawValue)), \(urls), \(items.map(\.host)), \(items.map(\.options)),
                        \(items.map(\.priority)), \(items.map { $0.paused ? "paused" : "waiting" }),
                        \(items.map { $0.parent?.rawValue ?? "" }), \(items.map { $0.part?.json ?? "" }))
                 WITH ORDINALITY AS p(id, urls, host, options, priority, state, parent, part, n)
            ORDER BY p.n
            """,
            logger: logger
        )
        if items.contains(where: { !$0.paused }) { try await notify(connection) }
    }

    public func entries(ids: [Download.ID]) async throws -> [CatalogueEntry] {
        guard !ids.isEmpty else { return [] }
        let found = try await withErrors("reading") { [self] in
            try await read("SELECT \(unescaped: PostgresSchema.columns) FROM swoop_downloads WHERE id = ANY(\(ids.map(\.rawValue)))")
        }
        let byID = Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return ids.compactMap { byID[$0] }
    }

    public func entries(in states: Set<Download.State>?, offset: Int, limit: Int) async throws -> [CatalogueEntry] {
        try await withErrors("reading") { [self] in
            let names = (states ?? Set(Download.State.allCases)).map(\.rawValue).sorted()
            return try await read(
                """
                SELECT \(unescaped: PostgresSchema.columns) FROM swoop_downloads WHERE state = ANY(\(names)) AND parent IS NULL
                ORDER BY priority DESC, position LIMIT \(max(0, limit)) OFFSET \(max(0, offset))
                """
            )
        }
    }

    public func stopped(offset: Int, limit: Int) async throws -> [CatalogueEntry] {
        try await withErrors("reading") { [self] in
            try await read(
                """
                SELECT \(unescaped: PostgresSchema.columns) FROM swoop_downloads
                WHERE state IN ('completed', 'failed', 'removed') AND parent IS NULL
                ORDER BY updated_at, id LIMIT \(max(0, limit)) OFFSET \(max(0, offset))
                """
            )
        }
    }

    public func parts(of id: Download.ID) async throws -> [CatalogueEntry] {
        try await withErrors("reading") { [self] in
            try await read("SELECT \(unescaped: PostgresSchema.columns) FROM swoop_downloads WHERE parent = \(id.rawValue) ORDER BY position")
        }
    }

    public func ids(startingWith prefix: String, limit: Int) async throws -> [Download.ID] {
        try await withErrors("reading") { [self] in
            // Ids are lower-case hex: every one that starts with the prefix sorts before the prefix and a "g".
            let rows = try await client.query(
                """
                SELECT id FROM swoop_downloads WHERE id >= \(prefix) AND id < \(prefix + "g") AND parent IS NULL ORDER BY id LIMIT \(max(0, limit))
                """,
                logger: logger
            )
            var ids: [Download.ID] = []
            for try await id in rows.decode(String.self) where id.hasPrefix(prefix) { ids.append(Download.ID(id)) }
            return ids
        }
    }

    public func counts() async throws -> [Download.State: Int] {
        try await withErrors("counting") { [self] in
            var counts: [Download.State: Int] = [:]
            let rows = try await client.query("SELECT state, count(*) FROM swoop_downloads WHERE parent IS NULL GROUP BY state", logger: logger)
            for try await (state, count) in rows.decode((String, Int).self) {
                if let state = Download.State(rawValue: state) { counts[state] = count }
            }
            return counts
        }
    }

    // MARK: - Wake-ups

    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let client = self.client
        let logger = self.logger
        let listening = Task {
            var delay = Duration.milliseconds(200)
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: PostgresSchema.channel) { notifications in
                            // Anything may have changed while no one listened.
                            continuation.yield()
                            delay = .milliseconds(200)
                            for try await _ in notifications { continuation.yield() }
                        }
                    }
                } catch {
                    if Task.isCancelled { break }
                    logger.debug("listening for the fleet's changes failed; again in \(delay)", metadata: ["error": "\(String(reflecting: error))"])
                }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
            continuation.finish()
        }
        let key = UUID()
        listeners.withLockedValue { $0[key] = listening }
        continuation.onTermination = { [listeners] _ in
            listening.cancel()
            listeners.withLockedValue { $0[key] = nil }
        }
        return stream
    }

    // MARK: - Helpers

    func notify(_ connection: PostgresConnection) async throws {
        try await connection.query("SELECT pg_notify(\(PostgresSchema.channel), '')", logger: logger)
    }

    func read(_ query: PostgresQuery) async throws -> [CatalogueEntry] {
        var entries: [CatalogueEntry] = []
        for try await row in try await client.query(query, logger: logger) { entries.append(try PostgresSchema.entry(row)) }
        return entries
    }

    /// Runs `body`, its errors as one ``SwoopError`` naming the catalogue and what was being done.
    ///
    /// Bounded by ``timeout``: the pool waits for a connection as long as it takes (PostgreSQL down,
    /// or out of connections), and a daemon must learn that its heartbeat did not get through while
    /// its lease may still be running. After ``close()``, at once.
    func withErrors<Result: Sendable>(
        _ doing: String, timeout: Duration? = nil, _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        let failure = { (why: String, code: SwoopError.Code) in
            SwoopError(code, "\(doing) the fleet's store at \(self.address.description) failed: \(why)", isRetryable: true)
        }
        if closed.withLockedValue({ $0 }) { throw failure("it was closed", .store) }
        let timeout = timeout ?? self.timeout
        let timedOut = failure("no answer within \(Int(timeout.seconds)) s", .timeout)
        do {
            // A race the caller leaves at the first end: the query, or the timer. A query does not
            // stop when cancelled (postgres-nio waits for the server), so it is left to finish alone.
            let outcome = NIOLockedValueBox<CheckedContinuation<Result, any Error>?>(nil)
            let tasks = NIOLockedValueBox<(work: Task<Void, Never>?, timer: Task<Void, Never>?)>((nil, nil))
            return try await withCheckedThrowingContinuation { continuation in
                outcome.withLockedValue { $0 = continuation }
                // The first end resumes the caller and stops the other side.
                let finish = { @Sendable (result: Swift.Result<Result, any Error>) in
                    let first = outcome.withLockedValue { pending -> Bool in
                        guard let waiting = pending else { return false }
                        waiting.resume(with: result)
                        pending = nil
                        return true
                    }
                    if first {
                        let (work, timer) = tasks.withLockedValue { $0 }
                        work?.cancel()
                        timer?.cancel()
                    }
                }
                tasks.withLockedValue { tasks in
                    tasks.timer = Task {
                        guard (try? await Task.sleep(for: timeout)) != nil else { return }
                        finish(.failure(timedOut))
                    }
                    tasks.work = Task {
                        do { finish(.success(try await body())) } catch { finish(.failure(error)) }
                    }
                }
            }
        } catch {
            if let error = Self.cause(of: error) as? SwoopError { throw error }
            throw failure(self.describe(error), Self.code(of: error))
        }
    }

    /// The error inside a failed transaction: the closure's, else BEGIN's, COMMIT's or ROLLBACK's.
    static func cause(of error: any Error) -> any Error {
        guard let failed = error as? PostgresTransactionError else { return error }
        return failed.closureError ?? failed.beginError ?? failed.commitError ?? failed.rollbackError ?? error
    }

    /// What kind of failure it was: the server not reached (a network error, as the exit codes
    /// say) or anything else the store did.
    static func code(of error: any Error) -> SwoopError.Code {
        let cause = (Self.cause(of: error) as? PSQLError)?.underlying ?? Self.cause(of: error)
        return cause is NIOConnectionError || cause is IOError ? .network : .store
    }

    /// A system error as `strerror` words it, anything else as it describes itself.
    static func words(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        return "\(error)"
    }

    /// What went wrong, in words: the server's message, else what failed on the way to it.
    func describe(_ error: any Error) -> String {
        guard let error = Self.cause(of: error) as? PSQLError else { return "\(Self.cause(of: error))" }
        if let message = error.serverInfo?[.message] { return message }
        switch error.code {
        case .authMechanismRequiresPassword: return "the server asks for a password: set PGPASSWORD or give --store-password-file"
        case .sslUnsupported: return "the server does not offer TLS (sslmode=\(address.tlsMode.rawValue); sslmode=disable goes without)"
        default: break
        }
        if let refused = error.underlying as? NIOConnectionError, let first = refused.connectionErrors.first?.error ?? refused.dnsAAAAError ?? refused.dnsAError {
            return "cannot connect: \(Self.words(first))"
        }
        if let underlying = error.underlying { return Self.words(underlying) }
        return "\(error.code)"
    }
}
