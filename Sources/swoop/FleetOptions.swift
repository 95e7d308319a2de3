import ArgumentParser
import Foundation
import SwoopKit
import SwoopPostgres

/// `--store postgres://…`: the shared queue of a fleet of daemons, for `daemon`, `add`, `ls`,
/// `pause`, `resume`, `rm` and `nodes`. Without it nothing changes: the state directory's SQLite.
struct FleetOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A fleet's shared queue in PostgreSQL: postgres://USER@HOST[:PORT]/DB[?sslmode=…] (password from PGPASSWORD or --store-password-file).",
            valueName: "url"
        )
    )
    var store: String?

    @Option(help: ArgumentHelp("Read the PostgreSQL password from this file (its first line).", valueName: "path"))
    var storePasswordFile: String?

    func validate() throws {
        if storePasswordFile != nil && store == nil { throw ValidationError("--store-password-file needs --store") }
    }

    /// The address given, with its password, or `nil` without `--store`.
    func address() throws -> PostgresAddress? {
        guard let store else { return nil }
        return try PostgresAddress(parsing: store).withPassword(environment: ProcessInfo.processInfo.environment, file: storePasswordFile)
    }

    /// The fleet's catalogue, its schema migrated, or `nil` without `--store`. A database with no
    /// fleet's tables is an error: a daemon makes them (a typo in its name would otherwise make a
    /// queue no daemon reads).
    func catalogue() async throws -> PostgresCatalogue? {
        guard let address = try address() else { return nil }
        let catalogue = try PostgresCatalogue(address)
        do {
            try await catalogue.prepare(creating: false)
        } catch {
            await catalogue.close()
            throw error
        }
        return catalogue
    }
}

/// Runs `body` with the fleet's catalogue, closing it after.
func withCatalogue<Result>(_ catalogue: PostgresCatalogue, _ body: (PostgresCatalogue) async throws -> Result) async throws -> Result {
    do {
        let result = try await body(catalogue)
        await catalogue.close()
        return result
    } catch {
        await catalogue.close()
        throw error
    }
}

/// The fleet's downloads whose ids are `ids` or start with them (each must name one).
func resolveFleetIDs(_ ids: [String], in catalogue: PostgresCatalogue) async throws -> [Download.ID] {
    var resolved: [Download.ID] = []
    for text in ids {
        do {
            resolved.append(try await catalogue.resolve(text))
        } catch let error as SwoopError where error.code == .notFound {
            throw SwoopError(.notFound, "no download \(text) in the fleet")
        }
    }
    return resolved
}
