import Foundation
import NIOConcurrencyHelpers

/// A ``DownloadStore`` that keeps records in memory only: nothing survives the process.
public final class InMemoryDownloadStore: DownloadStore {
    private let records = NIOLockedValueBox(RecordTable())
    /// Controls for the managers that share this store in one process, oldest first.
    private let posted = NIOLockedValueBox<[PostedControl]>([])

    /// Creates an empty store.
    public init() {}

    public func find(url: String, directory: String, requestedName: String) throws -> DownloadRecord? {
        records.withLockedValue { $0.record(for: DownloadKey(url: url, directory: directory, requestedName: requestedName)) }
    }

    public func find(_ keys: [DownloadKey]) throws -> [DownloadRecord] {
        records.withLockedValue { records in keys.compactMap { records.record(for: $0) } }
    }

    public func unfinished(directory: String, fileName: String) throws -> DownloadRecord? {
        records.withLockedValue { $0.unfinished(directory: directory, fileName: fileName) }
    }

    public func record(id: Download.ID) throws -> DownloadRecord? {
        records.withLockedValue { $0[id] }
    }

    public func save(_ record: DownloadRecord) throws {
        records.withLockedValue { $0[record.id] = record }
    }

    /// Under the store's lock, so that no other write falls between reading and writing the record.
    public func update(_ record: DownloadRecord, durable: Bool) throws {
        try records.withLockedValue { records in
            guard let stored = records[record.id] else {
                throw SwoopError(.store, "the record of \(record.url) was removed meanwhile")
            }
            var merged = record
            merged.priority = stored.priority
            merged.position = stored.position
            merged.createdAt = stored.createdAt
            merged.settings = stored.settings
            merged.mirrors = stored.mirrors
            records[record.id] = merged
        }
    }

    /// Under the store's lock, so that no update falls between reading and writing the record.
    public func update(settings: DownloadSettings, id: Download.ID) throws {
        records.withLockedValue { $0[id]?.settings = settings }
    }

    public func post(_ control: PostedControl) throws {
        posted.withLockedValue { $0.append(control) }
    }

    public func controls() throws -> [PostedControl] {
        posted.withLockedValue { $0 }
    }

    public func answer(_ token: String, _ answer: PostedControl.Answer) throws {
        posted.withLockedValue { all in
            for index in all.indices where all[index].token == token { all[index].answer = answer }
        }
    }

    public func withdraw(_ token: String) throws {
        posted.withLockedValue { $0.removeAll { $0.token == token } }
    }

    public func markActive(ids: [Download.ID], at date: Date) throws {
        records.withLockedValue { records in
            for id in ids where records[id]?.state == .waiting {
                records[id]?.state = .active
                records[id]?.updatedAt = date
            }
        }
    }

    public func save(contentsOf records: [DownloadRecord], expecting: [Download.ID: DownloadRecord.Version]) throws {
        try self.records.withLockedValue { stored in
            for record in records {
                if let version = expecting[record.id], let current = stored[record.id], current.version != version {
                    throw SwoopError.changedMeanwhile(record.id)
                }
            }
            for record in records { stored[record.id] = record }
        }
    }

    public func checkpoint(id: Download.ID, committedBytes: Int, syncedBytes: Int, bootID: String, bytesPerSecond: Double) throws {
        records.withLockedValue { records in
            records[id]?.bytesPerSecond = bytesPerSecond
            records[id]?.committedBytes = committedBytes
            records[id]?.syncedBytes = syncedBytes
            records[id]?.bootID = bootID
            records[id]?.updatedAt = Date()
        }
    }

    public func checkpoint(id: Download.ID, segments: [Segment], bootID: String, bytesPerSecond: Double) throws {
        records.withLockedValue { records in
            records[id]?.segments = segments
            records[id]?.committedBytes = segments.reduce(0) { $0 + $1.written }
            records[id]?.syncedBytes = segments.reduce(0) { $0 + $1.synced }
            records[id]?.bootID = bootID
            records[id]?.bytesPerSecond = bytesPerSecond
            records[id]?.updatedAt = Date()
        }
    }

    public func all() throws -> [DownloadRecord] {
        records.withLockedValue { records in
            records.values.sorted { a, b in
                (-a.priority, a.position, a.createdAt.timeIntervalSince1970, a.id.rawValue)
                    < (-b.priority, b.position, b.createdAt.timeIntervalSince1970, b.id.rawValue)
            }
        }
    }

    public func delete(id: Download.ID) throws {
        _ = records.withLockedValue { $0.removeValue(forKey: id) }
        posted.withLockedValue { $0.removeAll { $0.id == id } }
    }
}
