import Foundation
import PostgresNIO
import SwoopKit

// Claims, leases and controls: every decision is ``CatalogueRules``'; the SQL reads the rows it
// needs, under row locks (and the claim lock), and writes what the rules say.

extension PostgresCatalogue {
    public func claim(_ request: ClaimRequest) async throws -> [Claim] {
        guard request.count > 0 else { return [] }
        // Leases that ran out are looked for at most once per `expiryScan`: every download that ever
        // ran leaves an entry in the leases' index until the next vacuum, so the look costs more than
        // the claim itself, and a lease is seconds long.
        let now = ContinuousClock.now
        let scanExpired = lastExpiryScan.withLockedValue { last in
            guard last.map({ now - $0 >= expiryScan }) ?? true else { return false }
            last = now
            return true
        }
        return try await withErrors("claiming downloads from") { [self] in
            try await client.withTransaction(logger: logger) { connection in
                // The fleet's limits count what every claim takes: such claims take turns. Without
                // limits, row locks suffice (FOR UPDATE SKIP LOCKED: two claims never take one row).
                let limited = request.maxActive != nil || request.maxPerHost != nil
                if limited {
                    try await connection.query("SELECT pg_advisory_xact_lock(\(PostgresSchema.claimLock))", logger: logger)
                }
                // A lease that ran out while a pause or a remove was asked of its holder: done now.
                for control in [CatalogueControl.pause, .remove] where scanExpired {
                    let state = CatalogueRules.settled(.released, requested: control).rawValue
                    try await connection.query(
                        """
                        UPDATE swoop_downloads SET state = \(state), requested = NULL, lease_until = NULL, updated_at = clock_timestamp()
                        WHERE state = 'active' AND lease_until < clock_timestamp() AND requested = \(control.rawValue)
                        """,
                        logger: logger
                    )
                }
                var perHost: [String: Int] = [:]
                if limited {
                    let busy = try await connection.query(
                        // A split download counts by its parts (the download itself is only watched).
                        """
                        SELECT host, count(*) FROM swoop_downloads d WHERE state = 'active' AND lease_until >= clock_timestamp()
                            AND NOT EXISTS (SELECT 1 FROM swoop_downloads p WHERE p.parent = d.id) GROUP BY host
                        """,
                        logger: logger
                    )
                    for try await (host, count) in busy.decode((String, Int).self) { perHost[host] = count }
                }
                let active = perHost.values.reduce(0, +)
                let full = CatalogueRules.fullHosts(perHost, maxPerHost: request.maxPerHost)
                // More than asked for: a host filling up within this claim skips its later downloads.
                let window = request.maxPerHost == nil ? request.count : max(request.count * 4, 64)
                // Waiting downloads, and those whose lease ran out, each through its own partial index
                // (one query with an OR would sort the whole table), merged in queue order.
                // Each node writes into its own directory: a waiting download with bytes on another
                // node still heard from is left to that node (which continues it from its part file)
                // for a while after it was resumed (`request.affinity`). The live nodes are an
                // uncorrelated subquery: read once, and only when a row with bytes is met.
                let (lease, affinity) = (request.lease.seconds, request.affinity.seconds)
                var found: [(priority: Int, position: Int, candidate: CatalogueRules.Candidate)] = []
                for waiting in [true] + (scanExpired ? [false] : []) {
                    let condition = waiting ? "state = 'waiting'" : "state = 'active' AND lease_until < clock_timestamp() AND requested IS NULL"
                    let query: PostgresQuery
                    if waiting && !request.takesParts {
                        query = """
                            SELECT id, host, priority, position FROM swoop_downloads
                            WHERE \(unescaped: condition) AND host <> ALL(\(full)) AND parent IS NULL
                                AND (completed_bytes = 0 OR node IS NULL OR node = \(request.node)
                                     OR updated_at < now() - \(affinity) * interval '1 second'
                                     OR node <> ALL(ARRAY(SELECT name FROM swoop_nodes WHERE beat_at >= now() - \(lease) * interval '1 second')))
                            ORDER BY priority DESC, position LIMIT \(window) FOR UPDATE SKIP LOCKED
                            """
                    } else {
                        query = """
                            SELECT id, host, priority, position FROM swoop_downloads
                            WHERE \(unescaped: condition) AND host <> ALL(\(full)) \(unescaped: request.takesParts ? "" : "AND parent IS NULL")
                            ORDER BY priority DESC, position LIMIT \(window) FOR UPDATE SKIP LOCKED
                            """
                    }
                    let rows = try await connection.query(query, logger: logger)
                    for try await (id, host, priority, position) in rows.decode((String, String, Int, Int).self) {
                        found.append((priority, position, .init(id: Download.ID(id), host: host)))
                    }
                }
                let candidates = found.sorted { ($1.priority, $0.position) < ($0.priority, $1.position) }.map(\.candidate)
                let chosen = CatalogueRules.choose(candidates, active: active, perHost: perHost, for: request)
                guard !chosen.isEmpty else { return [] }
                var claimed: [Download.ID: CatalogueEntry] = [:]
                // Taken from another node, into a directory of this one's: it starts over here, and
                // shows no bytes until this node reports some (in a shared directory it goes on).
                let updated = try await connection.query(
                    """
                    UPDATE swoop_downloads SET state = 'active', node = \(request.node), epoch = epoch + 1,
                        lease_until = clock_timestamp() + \(request.lease.seconds) * interval '1 second',
                        requested = NULL, error = NULL, speed = 0, updated_at = clock_timestamp(),
                        completed_bytes = CASE WHEN \(request.takesParts) OR node = \(request.node) THEN completed_bytes ELSE 0 END,
                        directory = CASE WHEN \(request.takesParts) OR node = \(request.node) THEN directory END
                    WHERE id = ANY(\(chosen.map(\.rawValue))) RETURNING \(unescaped: PostgresSchema.columns)
                    """,
                    logger: logger
                )
                for try await row in updated {
                    let entry = try PostgresSchema.entry(row)
                    claimed[entry.id] = entry
                }
                return chosen.compactMap { claimed[$0] }.map { Claim(entry: $0, node: request.node, epoch: $0.epoch) }
            }
        }
    }

    public func renew(node: String, lease: Duration, progress: [ClaimProgress]) async throws -> Renewal {
        guard !progress.isEmpty else { return Renewal() }
        return try await withErrors("renewing claims in") { [self] in
            var renewal = Renewal(lost: Set(progress.map(\.id)))
            let rows = try await client.query(
                """
                UPDATE swoop_downloads AS d SET lease_until = clock_timestamp() + \(lease.seconds) * interval '1 second',
                    completed_bytes = p.completed, total_bytes = nullif(p.total, -1), speed = p.speed,
                    file_name = coalesce(nullif(p.file, ''), d.file_name), directory = coalesce(nullif(p.dir, ''), d.directory),
                    updated_at = clock_timestamp()
                FROM unnest(\(progress.map(\.id.rawValue)), \(progress.map(\.epoch)), \(progress.map(\.completedBytes)),
                            \(progress.map { $0.totalBytes ?? -1 }), \(progress.map(\.bytesPerSecond)), \(progress.map { $0.fileName ?? "" }),
                            \(progress.map { $0.directory ?? "" }))
                     AS p(id, epoch, completed, total, speed, file, dir)
                WHERE d.id = p.id AND d.node = \(node) AND d.epoch = p.epoch AND d.state = 'active'
                RETURNING d.id, d.requested
                """,
                logger: logger
            )
            for try await (id, requested) in rows.decode((String, String?).self) {
                let id = Download.ID(id)
                renewal.lost.remove(id)
                if let control = requested.flatMap(CatalogueControl.init(rawValue:)) { renewal.requested[id] = control }
            }
            return renewal
        }
    }

    public func settle(_ claim: Claim, as outcome: ClaimOutcome) async throws -> Bool {
        try await settle([ClaimEnd(claim, outcome)]).first ?? false
    }

    /// One statement for all: each row's state after a pause or a remove asked meanwhile, or neither,
    /// is ``CatalogueRules/settled(_:requested:)``'s, passed in as three columns.
    public func settle(_ ends: [ClaimEnd]) async throws -> [Bool] {
        guard !ends.isEmpty else { return [] }
        let details = ends.map { CatalogueRules.details(of: $0.outcome) }
        let ids = ends.map(\.claim.id.rawValue)
        return try await withErrors("ending claims in") { [self] in
            try await client.withTransaction(logger: logger) { connection in
                let rows = try await connection.query(
                    """
                    UPDATE swoop_downloads AS d SET
                        state = CASE d.requested WHEN 'pause' THEN e.after_pause WHEN 'remove' THEN e.after_remove ELSE e.otherwise END,
                        requested = NULL, lease_until = NULL, speed = 0, error = nullif(e.error, ''),
                        file_name = coalesce(nullif(e.file, ''), d.file_name), total_bytes = coalesce(nullif(e.total, -1), d.total_bytes),
                        completed_bytes = coalesce(nullif(e.total, -1), d.completed_bytes), directory = coalesce(nullif(e.dir, ''), d.directory),
                        updated_at = clock_timestamp()
                    FROM unnest(\(ids), \(ends.map(\.claim.node)), \(ends.map(\.claim.epoch)),
                                \(ends.map { CatalogueRules.settled($0.outcome, requested: .pause).rawValue }),
                                \(ends.map { CatalogueRules.settled($0.outcome, requested: .remove).rawValue }),
                                \(ends.map { CatalogueRules.settled($0.outcome, requested: nil).rawValue }),
                                \(details.map { $0.error ?? "" }), \(details.map { $0.fileName ?? "" }), \(details.map { $0.totalBytes ?? -1 }),
                                \(ends.map { $0.directory ?? "" }))
                         AS e(id, node, epoch, after_pause, after_remove, otherwise, error, file, total, dir)
                    WHERE d.id = e.id AND d.node = e.node AND d.epoch = e.epoch AND d.state = 'active'
                    RETURNING d.id, d.state, d.parent IS NOT NULL
                    """,
                    logger: logger
                )
                var ended: [String: String] = [:]
                var partEnded = false
                for try await (id, state, isPart) in rows.decode((String, String, Bool).self) {
                    ended[id] = state
                    partEnded = partEnded || isPart
                }
                // Idle nodes claim what waits again; the node watching a split download hears its part ended.
                if partEnded || ended.values.contains(Download.State.waiting.rawValue) { try await notify(connection) }
                return ids.map { ended[$0] != nil }
            }
        }
    }

    public func split(_ claim: Claim, into parts: [CatalogueItem]) async throws -> Bool {
        try await withErrors("splitting a download in") { [self] in
            try await client.withTransaction(logger: logger) { connection in
                let held = try await connection.query(
                    """
                    SELECT id FROM swoop_downloads
                    WHERE id = \(claim.id.rawValue) AND node = \(claim.node) AND epoch = \(claim.epoch) AND state = 'active' FOR UPDATE
                    """,
                    logger: logger
                )
                var found = false
                for try await _ in held.decode(String.self) { found = true }
                guard found else { return false }
                try await connection.query("DELETE FROM swoop_downloads WHERE parent = \(claim.id.rawValue)", logger: logger)
                if !parts.isEmpty { try await insert(parts, connection) }
                return true
            }
        }
    }

    public func control(_ control: CatalogueControl, ids: [Download.ID]) async throws -> [Download.ID: ControlEffect] {
        guard !ids.isEmpty else { return [:] }
        let doing = control == .remove ? "removing" : control == .pause ? "pausing" : "resuming"
        return try await withErrors("\(doing) downloads in") { [self] in
            try await client.withTransaction(logger: logger) { connection in
                var effects: [Download.ID: ControlEffect] = Dictionary(uniqueKeysWithValues: ids.map { ($0, ControlEffect.notFound) })
                var changes: [(id: String, state: String, requested: String)] = []
                // Not while a move shifts rows: it locks them in another order.
                try await connection.query("SELECT pg_advisory_xact_lock_shared(\(PostgresSchema.moveLock))", logger: logger)
                // The downloads, and the parts of those that are split.
                let rows = try await connection.query(
                    """
                    SELECT id, state, requested, node, parent, coalesce(lease_until < clock_timestamp(), false) FROM swoop_downloads
                    WHERE id = ANY(\(ids.map(\.rawValue))) OR parent = ANY(\(ids.map(\.rawValue))) ORDER BY id FOR UPDATE
                    """,
                    logger: logger
                )
                for try await (id, state, requested, node, parent, expired) in rows.decode((String, String, String?, String?, String?, Bool).self) {
                    let current = CatalogueRules.seen(Download.State(rawValue: state) ?? .failed, leaseExpired: expired)
                    if parent != nil, !CatalogueRules.cascades(control, toPartIn: current) { continue }
                    let asked = requested.flatMap(CatalogueControl.init(rawValue:))
                    let change = CatalogueRules.apply(control, to: current, requested: asked, node: node)
                    if parent == nil || effects[Download.ID(id)] != nil { effects[Download.ID(id)] = change.effect }
                    if change.state != current || change.requested != asked {
                        changes.append((id, change.state.rawValue, change.requested?.rawValue ?? ""))
                    }
                }
                guard !changes.isEmpty else { return effects }
                try await connection.query(
                    """
                    UPDATE swoop_downloads AS d SET state = c.state, requested = nullif(c.requested, ''),
                        lease_until = CASE WHEN c.state = 'active' THEN d.lease_until END, updated_at = clock_timestamp()
                    FROM unnest(\(changes.map(\.id)), \(changes.map(\.state)), \(changes.map(\.requested))) AS c(id, state, requested)
                    WHERE d.id = c.id
                    """,
                    logger: logger
                )
                // Idle nodes claim what was resumed; a node running a download hears what was asked of it.
                if effects.values.contains(where: { $0 == .done(.waiting) || { if case .asked = $0 { true } else { false } }($0) }) {
                    try await notify(connection)
                }
                return effects
            }
        }
    }
}
