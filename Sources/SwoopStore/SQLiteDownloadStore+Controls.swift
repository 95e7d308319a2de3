import Foundation
import GRDB
import SwoopKit

// Settings and controls: what another process changes in a download that one process transfers.

extension SQLiteDownloadStore {
    /// Controls older than this are left by callers that died while waiting: a post clears them.
    static let abandonedControlAge: TimeInterval = 600

    public func update(settings: DownloadSettings, id: Download.ID) throws {
        try write { db in
            try db.cachedStatement(sql: "UPDATE download SET settings = ? WHERE id = ?").execute(arguments: [Row.encode(settings), id.rawValue])
        }
        try makeDurable()
    }

    public func post(_ control: PostedControl) throws {
        try write { db in
            try db.inTransaction {
                try db.cachedStatement(sql: "DELETE FROM control WHERE postedAt < ?")
                    .execute(arguments: [control.postedAt.timeIntervalSince1970 - Self.abandonedControlAge])
                try db.cachedStatement(sql: "INSERT INTO control (token, id, request, postedAt) VALUES (?, ?, ?, ?)")
                    .execute(arguments: [control.token, control.id.rawValue, control.control.rawValue, control.postedAt.timeIntervalSince1970])
                return .commit
            }
        }
    }

    /// Controls a newer Swoop left that this one does not know are skipped (and stay for it).
    public func controls() throws -> [PostedControl] {
        try read { db in
            var result: [PostedControl] = []
            let rows = try GRDB.Row.fetchCursor(
                db.cachedStatement(sql: "SELECT token, id, request, postedAt, answerCode, answerMessage FROM control ORDER BY postedAt, rowid")
            )
            while let row = try rows.next() {
                guard let control = DownloadControl(rawValue: row[2]) else { continue }
                var answer: PostedControl.Answer?
                if let name: String = row[4] {
                    answer = SwoopError.Code(name: name).map { .failed($0, row[5] ?? "") } ?? .failed(.other, row[5] ?? "")
                    if name == "done" { answer = .done }
                }
                result.append(
                    PostedControl(
                        token: row[0], id: Download.ID(row[1] as String), control: control,
                        postedAt: Date(timeIntervalSince1970: row[3]), answer: answer
                    )
                )
            }
            return result
        }
    }

    public func answer(_ token: String, _ answer: PostedControl.Answer) throws {
        let (code, message): (String, String?)
        switch answer {
        case .done: (code, message) = ("done", nil)
        case .failed(let failure, let text): (code, message) = (failure.description, text)
        }
        try write { db in
            try db.cachedStatement(sql: "UPDATE control SET answerCode = ?, answerMessage = ? WHERE token = ?")
                .execute(arguments: [code, message, token])
        }
    }

    public func withdraw(_ token: String) throws {
        try write { db in
            try db.cachedStatement(sql: "DELETE FROM control WHERE token = ?").execute(arguments: [token])
        }
    }
}
