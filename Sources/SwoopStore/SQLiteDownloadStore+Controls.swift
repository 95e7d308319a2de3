import Foundation
import GRDB
import SwoopKit

// Settings and controls: what another process changes in a download that one process transfers.

extension SQLiteDownloadStore {
    public func update(settings: DownloadSettings, id: Download.ID) throws {
        try write { db in
            try db.cachedStatement(sql: "UPDATE download SET settings = ? WHERE id = ?").execute(arguments: [Row.encode(settings), id.rawValue])
        }
        try makeDurable()
    }

    public func post(_ control: DownloadControl, id: Download.ID) throws {
        try write { db in
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO control (id, request, postedAt) VALUES (?, ?, ?)")
                .execute(arguments: [id.rawValue, control.rawValue, Date().timeIntervalSince1970])
        }
    }

    /// Controls a newer Swoop left that this one does not know are skipped (and stay for it).
    public func controls() throws -> [Download.ID: DownloadControl] {
        try read { db in
            var result: [Download.ID: DownloadControl] = [:]
            let rows = try GRDB.Row.fetchCursor(db.cachedStatement(sql: "SELECT id, request FROM control"))
            while let row = try rows.next() {
                if let control = DownloadControl(rawValue: row[1]) { result[Download.ID(row[0] as String)] = control }
            }
            return result
        }
    }

    public func clearControl(id: Download.ID) throws {
        try write { db in
            try db.cachedStatement(sql: "DELETE FROM control WHERE id = ?").execute(arguments: [id.rawValue])
        }
    }
}
