import Foundation
import PostgresNIO
import SwoopKit

// The fleet's nodes: a name taken for one run of a daemon, heartbeats (which take nodes silent too
// long off the list), leaving, and the list.
extension PostgresCatalogue {
    public func join(_ beat: NodeBeat, lease: Duration) async throws -> FleetNode? {
        started.withLockedValue { _ = $0.insert(beat.name) }
        let joined = try await withErrors("joining") { [self] in
            try await record(beat, first: true, unlessHeardWithin: lease)
        }
        if joined { return nil }
        return try await holder(of: beat.name)
    }

    @discardableResult
    public func beat(_ beat: NodeBeat) async throws -> Bool {
        let first = started.withLockedValue { $0.insert(beat.name).inserted }
        return try await withErrors("recording a heartbeat in") { [self] in try await record(beat, first: first, unlessHeardWithin: nil) }
    }

    /// Writes a heartbeat in one statement, taking nodes silent too long off the list. Another run's
    /// row is left as it is, unless `unlessHeardWithin` is given and it was silent that long (a join).
    func record(_ beat: NodeBeat, first: Bool, unlessHeardWithin lease: Duration?) async throws -> Bool {
        let takeOver = lease != nil
        let rows = try await client.query(
            """
            WITH gone AS (
                DELETE FROM swoop_nodes
                WHERE beat_at < clock_timestamp() - make_interval(secs => \(beat.forgetsSilentNodesAfter.seconds)) AND name <> \(beat.name)
            )
            INSERT INTO swoop_nodes (name, address, started_at, beat_at, active, speed, shared_dir, instance)
            VALUES (\(beat.name), \(beat.address), clock_timestamp(), clock_timestamp(), \(beat.activeDownloads), \(beat.bytesPerSecond),
                    \(beat.sharedDirectory), \(beat.instance))
            ON CONFLICT (name) DO UPDATE SET address = excluded.address, beat_at = excluded.beat_at, active = excluded.active,
                shared_dir = excluded.shared_dir, instance = excluded.instance,
                speed = excluded.speed, started_at = CASE WHEN \(first) THEN excluded.started_at ELSE swoop_nodes.started_at END
            WHERE swoop_nodes.instance = excluded.instance
                OR (\(takeOver) AND swoop_nodes.beat_at < clock_timestamp() - make_interval(secs => \((lease ?? .zero).seconds)))
            RETURNING name
            """,
            logger: logger
        )
        var recorded = false
        for try await _ in rows.decode(String.self) { recorded = true }
        return recorded
    }

    public func leave(node: String, instance: String) async throws {
        _ = try await withErrors("taking a node off the list of") { [self] in
            try await client.query("DELETE FROM swoop_nodes WHERE name = \(node) AND (\(instance) = '' OR instance = \(instance))", logger: logger)
        }
    }

    public func nodes() async throws -> [FleetNode] {
        try await withErrors("reading the nodes of") { [self] in
            var nodes: [FleetNode] = []
            let rows = try await client.query(
                """
                SELECT name, address, started_at, beat_at, active, speed, extract(epoch FROM clock_timestamp() - beat_at)::float8, shared_dir
                FROM swoop_nodes ORDER BY name
                """,
                logger: logger
            )
            let columns = (String, String, Date, Date, Int, Double, Double, String).self
            for try await (name, address, started, beat, active, speed, silent, shared) in rows.decode(columns) {
                nodes.append(
                    FleetNode(
                        name: name, address: address, startedAt: started, lastBeat: beat, activeDownloads: active, bytesPerSecond: speed,
                        silentFor: silent, sharedDirectory: shared
                    )
                )
            }
            return nodes
        }
    }
}
