import Foundation
import GRDB
import SwoopKit

// Claims, leases and controls, each in one immediate transaction: every decision is
// ``CatalogueRules``'.

extension SQLiteCatalogue {
    public func claim(_ request: ClaimRequest) async throws -> [Claim] {
        guard request.count > 0 else { return [] }
        let now = self.now
        let until = now + request.lease.seconds
        return try await withErrors("claiming downloads from") {
            try await database.write { db in
                // A lease that ran out while a pause or a remove was asked of its holder: done now.
                for control in [CatalogueControl.pause, .remove] {
                    try db.execute(
                        sql: """
                            UPDATE catalogue_downloads SET state = ?, requested = NULL, lease_until = NULL, updated_at = ?
                            WHERE state = 'active' AND lease_until < ? AND requested = ?
                            """,
                        arguments: [CatalogueRules.settled(.released, requested: control).rawValue, now, now, control.rawValue]
                    )
                }
                var perHost: [String: Int] = [:]
                for row in try GRDB.Row.fetchAll(
                    // A split download counts by its parts (the download itself is only watched).
                    db,
                    sql: """
                        SELECT host, count(*) FROM catalogue_downloads d WHERE state = 'active' AND lease_until >= ?
                            AND NOT EXISTS (SELECT 1 FROM catalogue_downloads p WHERE p.parent = d.id) GROUP BY host
                        """,
                    arguments: [now]
                ) {
                    perHost[row[0]] = row[1]
                }
                let full = CatalogueRules.fullHosts(perHost, maxPerHost: request.maxPerHost)
                let skipping = full.isEmpty ? "" : "AND host NOT IN (\(Self.placeholders(full.count)))"
                let window = request.maxPerHost == nil ? request.count : max(request.count * 4, 64)
                // Each node writes into its own directory: a waiting download with bytes on another
                // node still heard from is left to that node (which continues it from its part file)
                // for a while after it was resumed (`request.affinity`).
                let elsewhere = """
                    AND NOT (state = 'waiting' AND completed_bytes > 0 AND node IS NOT NULL AND node <> ? AND updated_at >= ?
                        AND node IN (SELECT name FROM catalogue_nodes WHERE beat_at >= ?))
                    """
                let affinity = now - request.affinity.seconds
                let candidates = try GRDB.Row.fetchAll(
                    db,
                    sql: """
                        SELECT id, host FROM catalogue_downloads
                        WHERE (state = 'waiting' OR (state = 'active' AND lease_until < ? AND requested IS NULL)) \(skipping)
                            \(request.takesParts ? "" : "AND parent IS NULL \(elsewhere)")
                        ORDER BY priority DESC, position LIMIT ?
                        """,
                    arguments: [now] + StatementArguments(full) + (request.takesParts ? [] : [request.node, affinity, now - request.lease.seconds]) + [window]
                ).map { CatalogueRules.Candidate(id: Download.ID($0[0]), host: $0[1]) }
                let chosen = CatalogueRules.choose(candidates, active: perHost.values.reduce(0, +), perHost: perHost, for: request)
                guard !chosen.isEmpty else { return [] }
                let ids = StatementArguments(chosen.map(\.rawValue))
                // Taken from another node, into a directory of this one's: it starts over here, and
                // shows no bytes until this node reports some (in a shared directory it goes on).
                try db.execute(
                    sql: """
                        UPDATE catalogue_downloads SET state = 'active', node = ?, epoch = epoch + 1, lease_until = ?, requested = NULL,
                            error = NULL, speed = 0, updated_at = ?,
                            completed_bytes = CASE WHEN ? OR node = ? THEN completed_bytes ELSE 0 END,
                            directory = CASE WHEN ? OR node = ? THEN directory END
                        WHERE id IN (\(Self.placeholders(chosen.count)))
                        """,
                    arguments: [request.node, until, now, request.takesParts, request.node, request.takesParts, request.node] + ids
                )
                let byID = Dictionary(
                    try Self.entries(db, where: "id IN (\(Self.placeholders(chosen.count)))", arguments: ids).map { ($0.id, $0) },
                    uniquingKeysWith: { first, _ in first }
                )
                return chosen.compactMap { byID[$0] }.map { Claim(entry: $0, node: request.node, epoch: $0.epoch) }
            }
        }
    }

    public func renew(node: String, lease: Duration, progress: [ClaimProgress]) async throws -> Renewal {
        guard !progress.isEmpty else { return Renewal() }
        let now = self.now
        return try await withErrors("renewing claims in") {
            try await database.write { db in
                var renewal = Renewal()
                for item in progress {
                    try db.execute(
                        sql: """
                            UPDATE catalogue_downloads SET lease_until = ?, completed_bytes = ?, total_bytes = ?, speed = ?,
                                file_name = coalesce(?, file_name), directory = coalesce(?, directory), updated_at = ?
                            WHERE id = ? AND node = ? AND epoch = ? AND state = 'active'
                            """,
                        arguments: [
                            now + lease.seconds, item.completedBytes, item.totalBytes, item.bytesPerSecond, item.fileName, item.directory, now,
                            item.id.rawValue, node, item.epoch,
                        ]
                    )
                    guard db.changesCount > 0 else {
                        renewal.lost.insert(item.id)
                        continue
                    }
                    let requested = try String.fetchOne(db, sql: "SELECT requested FROM catalogue_downloads WHERE id = ?", arguments: [item.id.rawValue])
                    if let control = requested.flatMap(CatalogueControl.init(rawValue:)) { renewal.requested[item.id] = control }
                }
                return renewal
            }
        }
    }

    public func settle(_ claim: Claim, as outcome: ClaimOutcome) async throws -> Bool {
        try await settle([ClaimEnd(claim, outcome)]).first ?? false
    }

    public func settle(_ ends: [ClaimEnd]) async throws -> [Bool] {
        guard !ends.isEmpty else { return [] }
        let now = self.now
        let (states, partEnded) = try await withErrors("ending claims in") {
            try await database.write { db -> ([Download.State?], Bool) in
                var partEnded = false
                let states = try ends.map { end -> Download.State? in
                    let claim = end.claim
                    let held = try GRDB.Row.fetchOne(
                        db, sql: "SELECT requested, parent FROM catalogue_downloads WHERE id = ? AND node = ? AND epoch = ? AND state = 'active'",
                        arguments: [claim.id.rawValue, claim.node, claim.epoch]
                    )
                    guard let held else { return nil }
                    let requested: String? = held[0]
                    if (held[1] as String?) != nil { partEnded = true }
                    let state = CatalogueRules.settled(end.outcome, requested: requested.flatMap(CatalogueControl.init(rawValue:)))
                    let details = CatalogueRules.details(of: end.outcome)
                    try db.execute(
                        sql: """
                            UPDATE catalogue_downloads SET state = ?, requested = NULL, lease_until = NULL, speed = 0, error = ?,
                                file_name = coalesce(?, file_name), total_bytes = coalesce(?, total_bytes),
                                completed_bytes = coalesce(?, completed_bytes), directory = coalesce(?, directory), updated_at = ?
                            WHERE id = ?
                            """,
                        arguments: [
                            state.rawValue, details.error, details.fileName, details.totalBytes, details.totalBytes, end.directory, now, claim.id.rawValue,
                        ]
                    )
                    return state
                }
                return (states, partEnded)
            }
        }
        // Idle nodes claim what waits again; the node watching a split download hears its part ended.
        if partEnded || states.contains(.waiting) { wake() }
        return states.map { $0 != nil }
    }

    public func split(_ claim: Claim, into parts: [CatalogueItem]) async throws -> Bool {
        let now = self.now
        let held = try await withErrors("splitting a download in") {
            try await database.write { db in
                let held = try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM catalogue_downloads WHERE id = ? AND node = ? AND epoch = ? AND state = 'active'",
                    arguments: [claim.id.rawValue, claim.node, claim.epoch]
                ) ?? false
                guard held else { return false }
                try db.execute(sql: "DELETE FROM catalogue_downloads WHERE parent = ?", arguments: [claim.id.rawValue])
                try Self.insert(parts, db, now: now)
                return true
            }
        }
        if held, !parts.isEmpty { wake() }
        return held
    }

    public func control(_ control: CatalogueControl, ids: [Download.ID]) async throws -> [Download.ID: ControlEffect] {
        guard !ids.isEmpty else { return [:] }
        let now = self.now
        let effects = try await withErrors("changing downloads in") {
            try await database.write { db in
                var effects: [Download.ID: ControlEffect] = Dictionary(uniqueKeysWithValues: ids.map { ($0, ControlEffect.notFound) })
                // The downloads, and the parts of those that are split.
                let marks = Self.placeholders(ids.count)
                let rows = try GRDB.Row.fetchAll(
                    db,
                    sql: """
                        SELECT id, state, requested, node, parent, coalesce(lease_until < ?, 0) FROM catalogue_downloads
                        WHERE id IN (\(marks)) OR parent IN (\(marks))
                        """,
                    arguments: [now] + StatementArguments(ids.map(\.rawValue) + ids.map(\.rawValue))
                )
                for row in rows {
                    let current = CatalogueRules.seen(Download.State(rawValue: row[1]) ?? .failed, leaseExpired: row[5])
                    let parent: String? = row[4]
                    if parent != nil, !CatalogueRules.cascades(control, toPartIn: current) { continue }
                    let requested: String? = row[2]
                    let asked = requested.flatMap(CatalogueControl.init(rawValue:))
                    let change = CatalogueRules.apply(control, to: current, requested: asked, node: row[3])
                    let id = Download.ID(row[0])
                    if parent == nil || effects[id] != nil { effects[id] = change.effect }
                    guard change.state != current || change.requested != asked else { continue }
                    try db.execute(
                        sql: """
                            UPDATE catalogue_downloads SET state = ?, requested = ?, lease_until = CASE WHEN ? = 'active' THEN lease_until END,
                                updated_at = ? WHERE id = ?
                            """,
                        arguments: [change.state.rawValue, change.requested?.rawValue, change.state.rawValue, now, row[0] as String]
                    )
                }
                return effects
            }
        }
        if effects.values.contains(where: Self.wakes) { wake() }
        return effects
    }

    /// Whether an effect is news for some node: a download to claim, or a request to its holder.
    static func wakes(_ effect: ControlEffect) -> Bool {
        switch effect {
        case .done(.waiting), .asked: true
        default: false
        }
    }
}
