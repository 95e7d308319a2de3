import Foundation
import PostgresNIO
import SwoopKit

// Forgetting, moving and revising downloads, each in one transaction that locks the rows it
// decides on; what is allowed and where a moved download goes are `CatalogueRules`' decisions.
extension PostgresCatalogue {
    public func forget(ids: [Download.ID]) async throws -> [Download.ID: EditEffect] {
        guard !ids.isEmpty else { return [:] }
        return try await withErrors("forgetting downloads in") { [self] in
            try await client.withTransaction(logger: logger) { connection in
                var effects: [Download.ID: EditEffect] = Dictionary(uniqueKeysWithValues: ids.map { ($0, EditEffect.notFound) })
                var forgotten: [String] = []
                // Not while a move shifts rows: it locks them in another order.
                try await connection.query("SELECT pg_advisory_xact_lock_shared(\(PostgresSchema.moveLock))", logger: logger)
                let rows = try await connection.query(
                    "SELECT id, state, node FROM swoop_downloads WHERE id = ANY(\(ids.map(\.rawValue))) AND parent IS NULL ORDER BY id FOR UPDATE",
                    logger: logger
                )
                for try await (id, name, node) in rows.decode((String, String, String?).self) {
                    let state = Download.State(rawValue: name) ?? .failed
                    if CatalogueRules.forgets(state) {
                        forgotten.append(id)
                        effects[Download.ID(id)] = .done
                    } else {
                        effects[Download.ID(id)] = .refused(state, holder: node)
                    }
                }
                if !forgotten.isEmpty {
                    try await connection.query(
                        "DELETE FROM swoop_downloads WHERE id = ANY(\(forgotten)) OR parent = ANY(\(forgotten))", logger: logger
                    )
                }
                return effects
            }
        }
    }

    public func forget(in states: Set<Download.State>) async throws -> Int {
        let names = states.filter(CatalogueRules.forgets).map(\.rawValue).sorted()
        guard !names.isEmpty else { return 0 }
        return try await withErrors("forgetting downloads in") { [self] in
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock_shared(\(PostgresSchema.moveLock))", logger: logger)
                let rows = try await connection.query(
                    """
                    WITH chosen AS (DELETE FROM swoop_downloads WHERE state = ANY(\(names)) AND parent IS NULL RETURNING id),
                         parts AS (DELETE FROM swoop_downloads WHERE parent IN (SELECT id FROM chosen))
                    SELECT count(*) FROM chosen
                    """,
                    logger: logger
                )
                var count = 0
                for try await forgotten in rows.decode(Int.self) { count = forgotten }
                return count
            }
        }
    }

    public func move(_ id: Download.ID, by offset: Int, from anchor: QueueAnchor) async throws -> EditEffect {
        try await withErrors("moving a download in") { [self] in
            try await client.withTransaction(logger: logger) { connection in
                // One move at a time: two would pick one place.
                try await connection.query("SELECT pg_advisory_xact_lock(\(PostgresSchema.moveLock))", logger: logger)
                guard let found = try await head(of: id, connection) else { return .notFound }
                guard CatalogueRules.waitingList.contains(found.state) else { return .refused(found.state, holder: found.node) }
                let names = CatalogueRules.waitingList.map(\.rawValue).sorted()
                let (priority, position) = (found.slot.priority, found.slot.position)
                var counts = (others: 0, current: 0)
                let counted = try await connection.query(
                    """
                    SELECT count(*), count(*) FILTER (WHERE priority > \(priority) OR (priority = \(priority) AND position < \(position)))
                    FROM swoop_downloads WHERE state = ANY(\(names)) AND parent IS NULL AND id <> \(id.rawValue)
                    """,
                    logger: logger
                )
                for try await (others, current) in counted.decode((Int, Int).self) { counts = (others, current) }
                let target = CatalogueRules.index(moving: offset, from: anchor, current: counts.current, count: counts.others + 1)
                guard target != counts.current else { return .moved(to: counts.current) }
                var around: [QueueSlot] = []
                let neighbours = try await connection.query(
                    """
                    SELECT priority, position FROM swoop_downloads WHERE state = ANY(\(names)) AND parent IS NULL AND id <> \(id.rawValue)
                    ORDER BY priority DESC, position LIMIT \(target == 0 ? 1 : 2) OFFSET \(max(0, target - 1))
                    """,
                    logger: logger
                )
                for try await (priority, position) in neighbours.decode((Int, Int).self) { around.append(QueueSlot(priority: priority, position: position)) }
                let before = target == 0 ? nil : around.first
                let after = target == 0 ? around.first : around.dropFirst().first
                // After every download's: the sequence's next value (new downloads come after it).
                var end = 0
                let next = try await connection.query(
                    "SELECT nextval(pg_get_serial_sequence('swoop_downloads', 'position')) * \(CatalogueRules.positionStep)", logger: logger
                )
                for try await value in next.decode(Int.self) { end = value }
                guard let placement = CatalogueRules.placement(between: before, and: after, end: end) else { return .moved(to: counts.current) }
                if let shift = placement.shift {
                    // The waiting list's rows only, locked in id order as a control locks them.
                    try await connection.query(
                        """
                        WITH moving AS (
                            SELECT id FROM swoop_downloads
                            WHERE priority = \(shift.priority) AND position <= \(shift.through) AND state = ANY(\(names)) AND parent IS NULL
                                AND id <> \(id.rawValue)
                            ORDER BY id FOR UPDATE
                        )
                        UPDATE swoop_downloads SET position = position - \(shift.by) WHERE id IN (SELECT id FROM moving)
                        """,
                        logger: logger
                    )
                }
                try await connection.query(
                    """
                    UPDATE swoop_downloads SET priority = \(placement.slot.priority), position = \(placement.slot.position),
                        updated_at = clock_timestamp() WHERE id = \(id.rawValue)
                    """,
                    logger: logger
                )
                return .moved(to: target)
            }
        }
    }

    public func revise(_ id: Download.ID, urls: [String]?, options: String?, heldBy: String?) async throws -> EditEffect {
        let host = urls?.first.map(CatalogueItem.host(of:))
        return try await withErrors("changing a download in") { [self] in
            try await client.withTransaction(logger: logger) { connection in
                guard let found = try await head(of: id, connection) else { return .notFound }
                guard CatalogueRules.revises(found.state, node: found.node, asker: heldBy) else { return .refused(found.state, holder: found.node) }
                try await connection.query(
                    """
                    UPDATE swoop_downloads SET urls = coalesce(\(urls), urls), host = coalesce(\(host), host),
                        options = coalesce(\(options), options), updated_at = clock_timestamp()
                    WHERE id = \(id.rawValue) OR parent = \(id.rawValue)
                    """,
                    logger: logger
                )
                return .done
            }
        }
    }

    /// A download's (not a part's) state, holder and place in the queue, its row locked for the
    /// transaction, or `nil` for none.
    func head(of id: Download.ID, _ connection: PostgresConnection) async throws -> (state: Download.State, node: String?, slot: QueueSlot)? {
        let rows = try await connection.query(
            "SELECT state, node, priority, position FROM swoop_downloads WHERE id = \(id.rawValue) AND parent IS NULL FOR UPDATE", logger: logger
        )
        var found: (state: Download.State, node: String?, slot: QueueSlot)?
        for try await (state, node, priority, position) in rows.decode((String, String?, Int, Int).self) {
            found = (Download.State(rawValue: state) ?? .failed, node, QueueSlot(priority: priority, position: position))
        }
        return found
    }
}
