import Foundation
import GRDB
import SwoopKit

// Forgetting, moving and revising downloads, each in one immediate transaction; what is allowed
// and where a moved download goes are `CatalogueRules`' decisions.
extension SQLiteCatalogue {
    public func forget(ids: [Download.ID]) async throws -> [Download.ID: EditEffect] {
        guard !ids.isEmpty else { return [:] }
        return try await withErrors("forgetting downloads in") {
            try await database.write { db in
                var effects: [Download.ID: EditEffect] = Dictionary(uniqueKeysWithValues: ids.map { ($0, EditEffect.notFound) })
                let rows = try GRDB.Row.fetchAll(
                    db, sql: "SELECT id, state, node FROM catalogue_downloads WHERE id IN (\(Self.placeholders(ids.count))) AND parent IS NULL",
                    arguments: StatementArguments(ids.map(\.rawValue))
                )
                for row in rows {
                    let (id, state) = (Download.ID(row[0]), Download.State(rawValue: row[1]) ?? .failed)
                    guard CatalogueRules.forgets(state) else {
                        effects[id] = .refused(state, holder: row[2])
                        continue
                    }
                    try db.execute(sql: "DELETE FROM catalogue_downloads WHERE id = ? OR parent = ?", arguments: [id.rawValue, id.rawValue])
                    effects[id] = .done
                }
                return effects
            }
        }
    }

    public func forget(in states: Set<Download.State>) async throws -> Int {
        let names = states.filter(CatalogueRules.forgets).map(\.rawValue).sorted()
        guard !names.isEmpty else { return 0 }
        return try await withErrors("forgetting downloads in") {
            try await database.write { db in
                let chosen = "SELECT id FROM catalogue_downloads WHERE state IN (\(Self.placeholders(names.count))) AND parent IS NULL"
                try db.execute(sql: "DELETE FROM catalogue_downloads WHERE parent IN (\(chosen))", arguments: StatementArguments(names))
                try db.execute(
                    sql: "DELETE FROM catalogue_downloads WHERE state IN (\(Self.placeholders(names.count))) AND parent IS NULL",
                    arguments: StatementArguments(names)
                )
                return db.changesCount
            }
        }
    }

    public func move(_ id: Download.ID, by offset: Int, from anchor: QueueAnchor) async throws -> EditEffect {
        let now = self.now
        return try await withErrors("moving a download in") {
            try await database.write { db in
                guard let (state, node, slot) = try Self.head(of: id, db) else { return .notFound }
                guard CatalogueRules.waitingList.contains(state) else { return .refused(state, holder: node) }
                let (priority, position) = (slot.priority, slot.position)
                let names = CatalogueRules.waitingList.map(\.rawValue).sorted()
                let list = "state IN (\(Self.placeholders(names.count))) AND parent IS NULL AND id <> ?"
                let arguments = StatementArguments(names) + [id.rawValue]
                let others = try Int.fetchOne(db, sql: "SELECT count(*) FROM catalogue_downloads WHERE \(list)", arguments: arguments) ?? 0
                let current = try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM catalogue_downloads WHERE \(list) AND (priority > ? OR (priority = ? AND position < ?))",
                    arguments: arguments + [priority, priority, position]
                ) ?? 0
                let target = CatalogueRules.index(moving: offset, from: anchor, current: current, count: others + 1)
                guard target != current else { return .moved(to: current) }
                let around = try GRDB.Row.fetchAll(
                    db, sql: "SELECT priority, position FROM catalogue_downloads WHERE \(list) ORDER BY priority DESC, position LIMIT ? OFFSET ?",
                    arguments: arguments + [target == 0 ? 1 : 2, max(0, target - 1)]
                ).map { QueueSlot(priority: $0[0], position: $0[1]) }
                let before = target == 0 ? nil : around.first
                let after = target == 0 ? around.first : around.dropFirst().first
                let step = CatalogueRules.positionStep
                let end = (try Int.fetchOne(db, sql: "SELECT coalesce(max(position), 0) + ? FROM catalogue_downloads", arguments: [step])) ?? step
                guard let placement = CatalogueRules.placement(between: before, and: after, end: end) else { return .moved(to: current) }
                if let shift = placement.shift {
                    try db.execute(
                        sql: "UPDATE catalogue_downloads SET position = position - ? WHERE priority = ? AND position <= ? AND \(list)",
                        arguments: [shift.by, shift.priority, shift.through] + arguments
                    )
                }
                try db.execute(
                    sql: "UPDATE catalogue_downloads SET priority = ?, position = ?, updated_at = ? WHERE id = ?",
                    arguments: [placement.slot.priority, placement.slot.position, now, id.rawValue]
                )
                return .moved(to: target)
            }
        }
    }

    public func revise(_ id: Download.ID, urls: [String]?, options: String?, heldBy: String?) async throws -> EditEffect {
        let now = self.now
        let encoded = try urls.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        let host = urls?.first.map(CatalogueItem.host(of:))
        return try await withErrors("changing a download in") {
            try await database.write { db in
                guard let (state, node, _) = try Self.head(of: id, db) else { return .notFound }
                guard CatalogueRules.revises(state, node: node, asker: heldBy) else { return .refused(state, holder: node) }
                try db.execute(
                    sql: """
                        UPDATE catalogue_downloads SET urls = coalesce(?, urls), host = coalesce(?, host), options = coalesce(?, options),
                            updated_at = ? WHERE id = ? OR parent = ?
                        """,
                    arguments: [encoded, host, options, now, id.rawValue, id.rawValue]
                )
                return .done
            }
        }
    }

    /// A download's (not a part's) state, holder and place in the queue, or `nil` for none.
    static func head(of id: Download.ID, _ db: Database) throws -> (state: Download.State, node: String?, slot: QueueSlot)? {
        guard let row = try GRDB.Row.fetchOne(
            db, sql: "SELECT state, node, priority, position FROM catalogue_downloads WHERE id = ? AND parent IS NULL", arguments: [id.rawValue]
        ) else { return nil }
        return (Download.State(rawValue: row[0]) ?? .failed, row[1], QueueSlot(priority: row[2], position: row[3]))
    }
}
