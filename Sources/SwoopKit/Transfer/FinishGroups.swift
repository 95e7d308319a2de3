import NIOConcurrencyHelpers

/// Finishes downloads in groups: the downloads that come to their end while a group is being
/// finished form the next one (``DiskBatches``). A group's files reach the disk together, by one
/// `syncfs` of their file system when little else waits to be written there, else each by its
/// own `fsync` after all were handed to the disk's write-back, so that the `fsync`s share the
/// journal's commits (``GroupFlush``); then one transaction records them completed and one flush
/// of the store's log makes it durable; then each file is renamed. With thousands of small files
/// the flushes and commits, not the bytes, were the cost of each file. (A checksum is verified
/// before a download joins a group: hashing a large file would hold up the others.)
///
/// The order within each download is the one ``Transfer`` keeps alone: its bytes flushed, then
/// its record stored completed, durably, then the rename. So a file never has its final name before
/// its bytes and its record are on disk, and a crash at any point leaves what a crash left before
/// (a completed record beside its part file is renamed by the next run). A download that fails a
/// step fails alone, its record as before the finish.
///
/// One group at a time, on a ``DiskWork`` thread, taken as soon as the previous one is done: a
/// download finishing while no group is being finished is a group of one. (Flushing the next group
/// while the last one is recorded was tried: the store's flush then waited for the file system's,
/// and 2,000 small files onto a fresh ext4 took longer.)
final class FinishGroups: Sendable {
    /// The most downloads one group flushes.
    static let maxGroup = 64

    /// The most disk threads that flush a group's files beside the one finishing it, each file by
    /// its own `fsync`, when its first file's flush took at least ``slowFlush`` (a disk; on tmpfs a
    /// flush is a few microseconds).
    static let flushHelpers = 7
    static let slowFlush = Duration.microseconds(100)

    /// What a group asks of the machine (tests replace it): what waits to be written, and the flush
    /// of a whole file system.
    struct Machine: Sendable {
        var dirtyBytes: @Sendable () -> Int? = FileSystem.dirtyBytesOnMachine
        var syncFileSystem: @Sendable (Int32) -> Int32? = FileSystem.syncFileSystem(holding:)
    }

    private struct Member: Sendable {
        let transfer: Exclusive<Transfer>
        let continuation: CheckedContinuation<Download, any Error>
    }

    /// A member whose file is flushed and whose record is completed in memory, with the record as
    /// it was before the finish (restored if the store does not take it).
    private struct Flushed {
        let member: Member
        let before: DownloadRecord
    }

    private let groups: DiskBatches<Member>
    private let machine: NIOLockedValueBox<Machine>
    private let confirmedByFileSystem: NIOLockedValueBox<Int>

    init(store: any DownloadStore) {
        let machine = NIOLockedValueBox(Machine())
        let confirmed = NIOLockedValueBox(0)
        self.groups = DiskBatches(maxBatch: Self.maxGroup) { group in
            let flushed = Self.flush(group, machine: machine.withLockedValue { $0 }, confirmed: confirmed)
            if !flushed.isEmpty { Self.record(flushed, in: store) }
        }
        self.machine = machine
        self.confirmedByFileSystem = confirmed
    }

    /// Finishes `transfer` with the others finishing now: returns its completed snapshot once its
    /// file has its final name, or throws what stopped it (its record then as before the finish).
    /// Not cancellable, as other disk work: a finish once begun is carried out.
    func finish(_ transfer: Transfer) async throws -> Download {
        try await withCheckedThrowingContinuation { continuation in
            groups.add(Member(transfer: Exclusive(value: transfer), continuation: continuation))
        }
    }

    /// How many finishes wait for the group being finished (for tests).
    var waitingCount: Int {
        groups.waitingCount
    }

    /// How many downloads a flush of their whole file system has flushed (for tests).
    var fileSystemFlushedCount: Int {
        confirmedByFileSystem.withLockedValue { $0 }
    }

    /// Replaces what groups ask of the machine (for tests).
    func use(_ machine: Machine) {
        self.machine.withLockedValue { $0 = machine }
    }

    /// Flushes the group's files and moves their records to completed in memory; returns those
    /// that are ready to be recorded. Those that are not are resumed with their error here.
    private static func flush(_ group: [Member], machine: Machine, confirmed: NIOLockedValueBox<Int>) -> [Flushed] {
        let transfers = group.map(\.transfer.value)
        let bytes = GroupFlush.mayStillBeDirty(fileSizes: transfers.map(\.offset))
        let byFileSystem: [Bool]
        // A single file is flushed alone whatever else is dirty: no need to look.
        let dirty = group.count > 1 ? machine.dirtyBytes() : nil
        switch GroupFlush.choose(files: group.count, bytes: bytes, dirtyOnMachine: dirty) {
        case .fileSystem:
            byFileSystem = flushFileSystems(of: transfers, with: machine.syncFileSystem)
            confirmed.withLockedValue { $0 += byFileSystem.filter { $0 }.count }
        case .eachFile:
            if group.count > 1 { writeBack(transfers) }
            byFileSystem = Array(repeating: false, count: group.count)
        }
        let befores = transfers.map(\.record)
        let failures = NIOLockedValueBox<[Int: any Error]>([:])
        let prepare: @Sendable (Int) -> Void = { index in
            do {
                try group[index].transfer.value.prepareCompletion(fileSystemFlushed: byFileSystem[index])
            } catch {
                failures.withLockedValue { $0[index] = error }
            }
        }
        if byFileSystem.allSatisfy({ $0 }) {
            // Nothing left to wait for: a look at each file's errors and size.
            for index in group.indices { prepare(index) }
        } else {
            // Each file flushed and checked, several at once: the disk serves `fsync`s that come
            // together with fewer cache flushes than one by one.
            DiskWork.forEach(group.count, helpers: flushHelpers, whenSlowerThan: slowFlush, prepare)
        }
        let failed = failures.withLockedValue { $0 }
        var flushed: [Flushed] = []
        for (index, member) in group.enumerated() {
            if let error = failed[index] {
                member.continuation.resume(throwing: error)
            } else {
                flushed.append(Flushed(member: member, before: befores[index]))
            }
        }
        return flushed
    }

    /// Flushes the file systems the transfers' part files are on, each once; returns for each
    /// transfer whether its file system's flush covered it. Not covered, its file is flushed by its
    /// own `fsync`: on a file system whose `syncfs` does not make its files durable
    /// (``GroupFlush/coversItsFiles(fileSystemType:)``), or when the `syncfs` failed (the file's
    /// `fsync` then names what failed).
    private static func flushFileSystems(of transfers: [Transfer], with syncFileSystem: (Int32) -> Int32?) -> [Bool] {
        var flushedDevices: [UInt64: Bool] = [:]
        return transfers.map { transfer in
            guard let part = transfer.part, let device = FileSystem.device(of: part.fd) else { return false }
            if let flushed = flushedDevices[device] { return flushed }
            let covers = FileSystem.type(of: part.fd).map(GroupFlush.coversItsFiles(fileSystemType:)) ?? false
            let flushed = covers && syncFileSystem(part.fd) == nil
            flushedDevices[device] = flushed
            return flushed
        }
    }

    /// Records the flushed downloads completed in one transaction, then renames each file; resumes
    /// each download with its outcome.
    private static func record(_ batch: [Flushed], in store: any DownloadStore) {
        let transfers = batch.map(\.member.transfer.value)
        // A download whose claim waited (`Transfer.claimPending`) claims its file in this transaction.
        let claiming = Set(transfers.filter(\.claimPending).map(\.record.id))
        var stored = store.update(contentsOf: transfers.map(\.record), claiming: claiming, durable: true)
        if stored.count != batch.count {
            // A store that answers for fewer records than it was given: none of them is known stored.
            stored = batch.map { _ in .failure(SwoopError(.store, "the store did not record the group's downloads (\(stored.count) answers for \(batch.count))")) }
        }
        for ((flushed, transfer), outcome) in zip(zip(batch, transfers), stored) {
            let result = Result {
                do {
                    try outcome.get()
                    transfer.claimPending = false
                    return try transfer.publishCompleted()
                } catch {
                    // Not recorded or not published, so not complete: the record goes back to what
                    // it was (active), the bytes stay in the part file, and the failure that follows
                    // records it.
                    transfer.record = flushed.before
                    throw error
                }
            }
            flushed.member.continuation.resume(with: result)
        }
    }

    /// Starts the write-back of every file of the group (`sync_file_range`) before the first
    /// `fsync` waits: the disk writes them together and one journal commit covers their blocks, so
    /// the `fsync`s after the first find little left to do.
    private static func writeBack(_ transfers: [Transfer]) {
        for transfer in transfers {
            transfer.part?.startWriteback(offset: 0, length: transfer.offset)
        }
    }
}
