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

    /// The fleet's catalogue, prepared (its schema made or migrated), or `nil` without `--store`.
    func catalogue() async throws -> PostgresCatalogue? {
        guard let address = try address() else { return nil }
        let catalogue = try PostgresCatalogue(address)
        do {
            try await catalogue.prepare()
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
    let exact = ids.filter(Download.ID.isGID).map(Download.ID.init)
    if exact.count == ids.count { return exact }
    var all: [Download.ID] = []
    var offset = 0
    while true {
        let page = try await catalogue.entries(in: nil, offset: offset, limit: 10_000)
        all += page.map(\.id)
        offset += page.count
        if page.count < 10_000 { break }
    }
    return try ids.map { prefix in
        let matches = all.filter { $0.rawValue.hasPrefix(prefix.lowercased()) }
        guard let first = matches.first else { throw SwoopError(.notFound, "no download \(prefix) in the fleet") }
        guard matches.count == 1 else { throw SwoopError(.invalidArgument, "\(prefix) names \(matches.count) downloads of the fleet: give more of the id") }
        return first
    }
}
