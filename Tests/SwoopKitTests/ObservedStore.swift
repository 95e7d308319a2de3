import Foundation
import NIOConcurrencyHelpers

@testable import SwoopKit

/// An in-memory store that tells a test about every `update` (with its durability), every group
/// of updates (before its records' own `update`s) and every `markActive` (its ids), before carrying them out;
/// an `update` that `failing` names an error for throws it instead, and a batch saved is shown to
/// `savingBatch` first (which may throw instead).
final class ObservedStore: DownloadStore {
    private let inner: InMemoryDownloadStore
    private let onUpdate: @Sendable (DownloadRecord, _ durable: Bool) -> Void
    private let onGroup: @Sendable ([DownloadRecord]) -> Void
    private let onMarkActive: @Sendable ([Download.ID]) -> Void
    private let failing: @Sendable (DownloadRecord, _ durable: Bool) -> SwoopError?
    private let savingBatch: @Sendable ([DownloadRecord]) throws -> Void

    init(
        inner: InMemoryDownloadStore = InMemoryDownloadStore(),
        onUpdate: @escaping @Sendable (DownloadRecord, _ durable: Bool) -> Void = { _, _ in },
        onGroup: @escaping @Sendable ([DownloadRecord]) -> Void = { _ in },
        onMarkActive: @escaping @Sendable ([Download.ID]) -> Void = { _ in },
        failing: @escaping @Sendable (DownloadRecord, _ durable: Bool) -> SwoopError? = { _, _ in nil },
        savingBatch: @escaping @Sendable ([DownloadRecord]) throws -> Void = { _ in }
    ) {
        self.inner = inner
        self.onUpdate = onUpdate
        self.onGroup = onGroup
        self.onMarkActive = onMarkActive
        self.failing = failing
        self.savingBatch = savingBatch
    }

    func update(_ record: DownloadRecord, durable: Bool) throws {
        onUpdate(record, durable)
        if let error = failing(record, durable) { throw error }
        try inner.update(record, durable: durable)
    }

    func update(contentsOf records: [DownloadRecord], claiming: Set<Download.ID>, durable: Bool) -> [Result<Void, SwoopError>] {
        onGroup(records)
        return records.map { record in
            Result {
                if claiming.contains(record.id), let owner = try holder(of: record) { throw SwoopError.nameTaken(record, by: owner) }
                try update(record, durable: durable)
            }.mapError { $0 as? SwoopError ?? SwoopError(.store, "\($0)") }
        }
    }

    func update(settings: DownloadSettings, id: Download.ID) throws {
        try inner.update(settings: settings, id: id)
    }

    func markActive(ids: [Download.ID], at date: Date) throws {
        onMarkActive(ids)
        try inner.markActive(ids: ids, at: date)
    }

    func save(_ record: DownloadRecord) throws { try inner.save(record) }
    func save(contentsOf records: [DownloadRecord], expecting: [Download.ID: DownloadRecord.Version]) throws {
        try savingBatch(records)
        try inner.save(contentsOf: records, expecting: expecting)
    }
    func find(url: String, directory: String, requestedName: String) throws -> DownloadRecord? {
        try inner.find(url: url, directory: directory, requestedName: requestedName)
    }
    func record(id: Download.ID) throws -> DownloadRecord? { try inner.record(id: id) }
    func unfinished(directory: String, fileName: String) throws -> DownloadRecord? {
        try inner.unfinished(directory: directory, fileName: fileName)
    }
    func checkpoint(id: Download.ID, committedBytes: Int, syncedBytes: Int, bootID: String, bytesPerSecond: Double) throws {
        try inner.checkpoint(id: id, committedBytes: committedBytes, syncedBytes: syncedBytes, bootID: bootID, bytesPerSecond: bytesPerSecond)
    }
    func checkpoint(id: Download.ID, segments: [Segment], bootID: String, bytesPerSecond: Double) throws {
        try inner.checkpoint(id: id, segments: segments, bootID: bootID, bytesPerSecond: bytesPerSecond)
    }
    func all() throws -> [DownloadRecord] { try inner.all() }
    func delete(id: Download.ID) throws { try inner.delete(id: id) }
}
