import NIOConcurrencyHelpers

/// Finishes downloads in groups: the downloads that come to their end while a group is being
/// finished form the next one. A group's files are all handed to the disk's write-back first, so
/// that their `fsync`s that follow share the file system's journal commits; then one transaction
/// records them completed and one flush of the store's log makes it durable; then each file is
/// renamed. With thousands of small files the flushes and commits, not the bytes, were the cost of
/// each file. (A checksum is verified before a download joins a group: hashing a large file would
/// hold up the others.)
///
/// The order within each download is the one ``Transfer`` keeps alone: its bytes flushed (its own
/// `fsync`, which reports that file's errors), then its record stored
/// completed, durably, then the rename. So a file never has its final name before its bytes and its
/// record are on disk, and a crash at any point leaves what a crash left before (a completed record
/// beside its part file is renamed by the next run).
///
/// One group at a time, on a ``DiskWork`` thread, taken as soon as the previous one is done: a
/// download finishing while no group is being finished is a group of one. A group's files are
/// flushed by up to ``flushHelpers`` more disk threads beside that one when the first took long
/// enough to be worth it (``DiskWork/forEach(_:helpers:whenSlowerThan:_:)``).
final class FinishGroups: Sendable {
    private let store: any DownloadStore
    private let waiting = NIOLockedValueBox(Waiting())

    /// The most downloads one group finishes.
    static let maxGroup = 64

    /// The most disk threads that flush a group's files beside the one finishing it, when its first
    /// file's flush took at least ``slowFlush`` (a disk; on tmpfs a flush is a few microseconds).
    static let flushHelpers = 7
    static let slowFlush = Duration.microseconds(100)

    private struct Waiting {
        var members: [Member] = []
        /// A disk thread is finishing groups; it takes the members that arrive meanwhile.
        var draining = false
    }

    private struct Member: Sendable {
        let transfer: Exclusive<Transfer>
        let continuation: CheckedContinuation<Download, any Error>
    }

    init(store: any DownloadStore) {
        self.store = store
    }

    /// Finishes `transfer` with the others finishing now: returns its completed snapshot once its
    /// file has its final name, or throws what stopped it (its record then as before the finish).
    /// Not cancellable, as other disk work: a finish once begun is carried out.
    func finish(_ transfer: Transfer) async throws -> Download {
        try await withCheckedThrowingContinuation { continuation in
            let startsDraining = waiting.withLockedValue { waiting in
                waiting.members.append(Member(transfer: Exclusive(value: transfer), continuation: continuation))
                defer { waiting.draining = true }
                return !waiting.draining
            }
            if startsDraining { DiskWork.submit { self.drain() } }
        }
    }

    /// How many finishes wait for the group being finished (for tests).
    var waitingCount: Int {
        waiting.withLockedValue { $0.members.count }
    }

    /// Finishes groups until none is waiting.
    private func drain() {
        while true {
            let group = waiting.withLockedValue { waiting in
                let group = Array(waiting.members.prefix(Self.maxGroup))
                waiting.members.removeFirst(group.count)
                if group.isEmpty { waiting.draining = false }
                return group
            }
            guard !group.isEmpty else { return }
            finish(group)
        }
    }

    private func finish(_ group: [Member]) {
        if group.count > 1 { writeBack(group) }
        var results = [Result<Download, any Error>](repeating: .failure(CancellationError()), count: group.count)
        // Each file flushed and checked, its record moved to completed in memory, several at once:
        // the disk serves `fsync`s that come together with fewer cache flushes than one by one.
        let befores = group.map { $0.transfer.value.record }
        let failures = NIOLockedValueBox<[Int: any Error]>([:])
        DiskWork.forEach(group.count, helpers: Self.flushHelpers, whenSlowerThan: Self.slowFlush) { index in
            do {
                try group[index].transfer.value.prepareCompletion()
            } catch {
                failures.withLockedValue { $0[index] = error }
            }
        }
        // Flushed and verified, moved to completed in memory: (member, record before the finish).
        var prepared: [(index: Int, before: DownloadRecord)] = []
        let failed = failures.withLockedValue { $0 }
        for index in group.indices {
            if let error = failed[index] {
                results[index] = .failure(error)
            } else {
                prepared.append((index, befores[index]))
            }
        }
        // A download whose claim waited (`Transfer.claimPending`) claims its file in this transaction.
        let members = prepared.map { group[$0.index].transfer.value }
        let claiming = Set(members.filter(\.claimPending).map(\.record.id))
        var stored = prepared.isEmpty ? [] : store.update(contentsOf: members.map(\.record), claiming: claiming, durable: true)
        if stored.count != prepared.count {
            // A store that answers for fewer records than it was given: none of them is known stored.
            stored = prepared.map { _ in .failure(SwoopError(.store, "the store did not record the group's downloads (\(stored.count) answers for \(prepared.count))")) }
        }
        for ((index, before), outcome) in zip(prepared, stored) {
            let transfer = group[index].transfer.value
            results[index] = Result {
                do {
                    try outcome.get()
                    transfer.claimPending = false
                    return try transfer.publishCompleted()
                } catch {
                    // Not recorded or not published, so not complete: the record goes back to what
                    // it was (active), the bytes stay in the part file, and the failure that follows
                    // records it.
                    transfer.record = before
                    throw error
                }
            }
        }
        for (member, result) in zip(group, results) {
            member.continuation.resume(with: result)
        }
    }

    /// Starts the write-back of every file of the group (`sync_file_range`) before the first
    /// `fsync` waits: the disk writes them together and one journal commit covers their blocks, so
    /// the `fsync`s after the first find little left to do. Only the group's own files: a
    /// `syncfs` would also write back every other download's and process's dirty pages.
    private func writeBack(_ group: [Member]) {
        for member in group {
            let transfer = member.transfer.value
            transfer.part?.startWriteback(offset: 0, length: transfer.offset)
        }
    }
}
