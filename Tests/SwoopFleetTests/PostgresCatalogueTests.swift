import Foundation
import SwoopKit
import SwoopPostgres
import SwoopTesting
import Testing

/// What only the PostgreSQL catalogue does: migrations that several daemons start at once, a schema
/// newer than the binary, an unreachable server, and the `postgres://` address a user types.
@Suite("PostgreSQL catalogue")
struct PostgresCatalogueTests {
    @Test func daemonsStartingAtOnceMigrateOnce() async throws {
        let server = try await PostgresServer.shared()
        let database = try await server.makeDatabase("migrate")
        let address = try PostgresAddress(parsing: server.url(database: database))
        let catalogues = try (0..<6).map { _ in try PostgresCatalogue(address) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for catalogue in catalogues { group.addTask { try await catalogue.prepare() } }
            try await group.waitForAll()
        }
        #expect(try await server.psql("SELECT string_agg(version::text, ',' ORDER BY version) FROM swoop_schema", database: database) == "1,2,3")
        // And again: nothing to do.
        try await catalogues[0].prepare()
        #expect(try await server.psql("SELECT count(*) FROM swoop_schema", database: database) == "3")
        for catalogue in catalogues { await catalogue.close() }
    }

    @Test func aNewerSchemaIsRefusedWithWhatToDo() async throws {
        let server = try await PostgresServer.shared()
        let database = try await server.makeDatabase("newer")
        let address = try PostgresAddress(parsing: server.url(database: database))
        let catalogue = try PostgresCatalogue(address)
        try await catalogue.prepare()
        _ = try await server.psql("INSERT INTO swoop_schema (version) VALUES (99)", database: database)
        let error = await #expect(throws: SwoopError.self) { try await catalogue.prepare() }
        #expect(
            error?.message
                == "the fleet's store at postgres://swoop@127.0.0.1:\(server.port)/\(database) has schema version 99, newer than this swoop knows (3): upgrade swoop"
        )
        await catalogue.close()
    }

    @Test func anUnreachableServerIsOneErrorNamingIt() async throws {
        let closed = try TestPort(listening: false)
        let address = try PostgresAddress(parsing: "postgres://swoop@127.0.0.1:\(closed.port)/fleet?sslmode=disable")
        let catalogue = try PostgresCatalogue(address)
        let started = ContinuousClock.now
        let error = await #expect(throws: SwoopError.self) { try await catalogue.prepare() }
        let message = try #require(error?.message)
        #expect(message == "opening the fleet's store at postgres://swoop@127.0.0.1:\(closed.port)/fleet failed: cannot connect: Connection refused")
        #expect(error?.code == .network && error?.isRetryable == true)
        #expect(ContinuousClock.now - started < .seconds(30))
        await catalogue.close()
    }

    @Test func aServerThatNeverAnswersIsAnErrorAfterTheTimeoutAndAClosedCatalogueAtOnce() async throws {
        let silent = try TestPort(listening: true)
        let address = try PostgresAddress(parsing: "postgres://swoop@127.0.0.1:\(silent.port)/fleet?sslmode=disable")
        let catalogue = try PostgresCatalogue(address, timeout: .seconds(1))
        let started = ContinuousClock.now
        let error = await #expect(throws: SwoopError.self) { try await catalogue.counts() }
        #expect(error?.message == "counting the fleet's store at postgres://swoop@127.0.0.1:\(silent.port)/fleet failed: no answer within 1 s")
        #expect(error?.code == .timeout)
        // Its 1 s, not the connection's own wait (minutes); loose, for a loaded machine.
        #expect(ContinuousClock.now - started < patience)
        await catalogue.close()
        let closed = await #expect(throws: SwoopError.self) { try await catalogue.renew(node: "a", lease: .seconds(1), progress: [ClaimProgress(id: .make(), epoch: 1)]) }
        #expect(closed?.message == "renewing claims in the fleet's store at postgres://swoop@127.0.0.1:\(silent.port)/fleet failed: it was closed")
    }

    @Test func aWrongPasswordIsTheServersOwnWords() async throws {
        let server = try await PostgresServer.shared()
        let address = try PostgresAddress(parsing: "postgres://swoop:wrong@127.0.0.1:\(server.port)/postgres?sslmode=disable")
        let catalogue = try PostgresCatalogue(address)
        let error = await #expect(throws: SwoopError.self) { try await catalogue.prepare() }
        #expect(error?.message.hasSuffix("failed: password authentication failed for user \"swoop\"") == true, "\(error?.message ?? "")")
        await catalogue.close()
    }

    @Test func expiredLeasesAreLookedForAtMostOncePerScanInterval() async throws {
        let server = try await PostgresServer.shared()
        let address = try PostgresAddress(parsing: server.url(database: try await server.makeDatabase("expiry")))
        let holder = try PostgresCatalogue(address)
        let taker = try PostgresCatalogue(address, expiryScan: .seconds(60))
        try await holder.prepare()
        let item = CatalogueItem(urls: ["http://127.0.0.1/x"])
        try await holder.add([item])
        #expect(try await holder.claim(ClaimRequest(node: "a", count: 1, lease: .seconds(2))).count == 1)
        #expect(try await taker.claim(ClaimRequest(node: "b", count: 1, lease: .seconds(60))).isEmpty, "a live lease")
        try await Task.sleep(for: .milliseconds(2500))
        #expect(try await taker.claim(ClaimRequest(node: "b", count: 1, lease: .seconds(60))).isEmpty, "looked less than 60 s ago")
        let fresh = try PostgresCatalogue(address)
        #expect(try await fresh.claim(ClaimRequest(node: "c", count: 1, lease: .seconds(60))).map(\.id) == [item.id])
        for catalogue in [holder, taker, fresh] { await catalogue.close() }
    }

    @Test func addressesAsLibpqWritesThem() throws {
        let plain = try PostgresAddress(parsing: "postgres://ann@db.example/queue")
        #expect(plain == PostgresAddress(user: "ann", host: "db.example", port: 5432, database: "queue", tlsMode: .prefer))
        let full = try PostgresAddress(parsing: "postgresql://ann:s%40cret@10.0.0.5:6543/q?sslmode=verify-full&sslrootcert=/etc/ca.pem")
        #expect(full.password == "s@cret" && full.port == 6543 && full.tlsMode == .verifyFull && full.rootCertificates == "/etc/ca.pem")
        #expect(full.description == "postgres://ann@10.0.0.5:6543/q", "no password in what is shown")
        let at = #expect(throws: SwoopError.self) { try PostgresAddress(parsing: "postgres://ann:p@ss@h/q?sslmode=no") }
        #expect(at?.message.contains("ss@") == false && at?.message.hasPrefix("invalid PostgreSQL address postgres://ann:***@h/q?sslmode=no") == true, "\(at?.message ?? "")")
        let socket = try PostgresAddress(parsing: "postgres://ann@/queue?host=/var/run/postgresql")
        #expect(socket.isUnixSocket && socket.socketPath == "/var/run/postgresql/.s.PGSQL.5432" && socket.tlsMode == .disable)
        let v6 = try PostgresAddress(parsing: "postgres://ann@[::1]:5433/q")
        #expect(v6.host == "::1" && v6.description == "postgres://ann@[::1]:5433/q")
    }

    @Test(arguments: [
        ("mysql://ann@h/q", "the scheme must be postgres://"),
        ("postgres://h/q", "no user name (postgres://USER@HOST/DATABASE)"),
        ("postgres://ann@h", "no database name (postgres://USER@HOST/DATABASE)"),
        ("postgres://ann@h/q?sslmode=maybe", "sslmode=maybe: use disable, prefer, require, verify-ca, verify-full"),
        ("postgres://ann@h/q?timeout=3", "unknown parameter timeout"),
        ("postgres://ann:pw@/q", "no host (or ?host=/socket/directory)"),
    ])
    func badAddressesSayWhatIsWrong(text: String, why: String) {
        let error = #expect(throws: SwoopError.self) { try PostgresAddress(parsing: text) }
        let shown = text.replacingOccurrences(of: "ann:pw@", with: "ann:***@")
        #expect(error?.message == "invalid PostgreSQL address \(shown): \(why)")
    }

    @Test func thePasswordComesFromTheEnvironmentOrAFile() throws {
        let address = try PostgresAddress(parsing: "postgres://ann:inurl@h/q")
        #expect(try address.withPassword(environment: [:], file: nil).password == "inurl")
        #expect(try address.withPassword(environment: ["PGPASSWORD": "env"], file: nil).password == "env")
        let file = try makeTemporaryDirectory("swoop-pgpass") + "/password"
        try "fromfile\nignored\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try address.withPassword(environment: ["PGPASSWORD": "env"], file: file).password == "fromfile")
        let error = #expect(throws: SwoopError.self) { try address.withPassword(environment: [:], file: file + ".missing") }
        #expect(error?.message == "cannot read the PostgreSQL password file \(file).missing")
    }
}
