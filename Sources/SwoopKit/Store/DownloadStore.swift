import Foundation

/// Where the manager keeps its records. SwoopStore provides the SQLite implementation;
/// ``InMemoryDownloadStore`` keeps nothing on disk.
///
/// Calls are synchronous and must be cheap: ``checkpoint(id:committedBytes:syncedBytes:bootID:bytesPerSecond:)``
/// runs on the download's hot path about once per MiB.
public protocol DownloadStore: Sendable {
    /// The record for this URL, directory and requested name, if any.
    func find(url: String, directory: String, requestedName: String) throws -> DownloadRecord?
    /// The record with this id, if any.
    func record(id: Download.ID) throws -> DownloadRecord?
    /// An unfinished record (not completed or removed) whose file in `directory` is `fileName`.
    func unfinished(directory: String, fileName: String) throws -> DownloadRecord?
    /// The unfinished records whose files in `directory` are among `fileNames`, at once.
    func unfinished(directory: String, fileNames: [String]) throws -> [DownloadRecord]
    /// Inserts or replaces a record, durably (it survives a power loss once this returns).
    func save(_ record: DownloadRecord) throws
    /// Inserts or replaces a record; `durable: false` may lose the write in a power loss (not in a
    /// process crash), for state that is cheap to lose, like "active".
    func save(_ record: DownloadRecord, durable: Bool) throws
    /// Writes what a transfer changes (state, file, validators, progress, request options) into an
    /// existing record, leaving its key, queue place (priority, position) and creation time as they
    /// are, so that a transfer never undoes a `move` or `setPriority`. A record that is gone stays
    /// gone: the update throws ``SwoopError/Code/store``.
    func update(_ record: DownloadRecord, durable: Bool) throws
    /// Writes a transfer's record as ``update(_:durable:)`` does without a flush, naming its file,
    /// unless another unfinished record (not completed or removed) in the same directory names that
    /// file: then nothing is written and that record is returned. The check and the write are one
    /// statement where the store can make them one.
    func claim(_ record: DownloadRecord) throws -> DownloadRecord?
    /// Writes several transfers' records as ``update(_:durable:)`` does, in one transaction where the
    /// store has them (a group of downloads finishing together: one commit, one flush). Returns each
    /// record's outcome in order: a record that is gone stays gone and fails alone. A record whose
    /// id is in `claiming` is written as ``claim(_:)`` writes it: when another unfinished record
    /// names its file, it is not, and fails alone with ``SwoopError/Code/destinationExists``.
    func update(contentsOf records: [DownloadRecord], claiming: Set<Download.ID>, durable: Bool) -> [Result<Void, SwoopError>]
    /// Marks waiting downloads active, for `ls` while their first requests are under way, in one
    /// transaction where the store has them. A record in any other state is left alone.
    func markActive(ids: [Download.ID], at date: Date) throws
    /// The records for many (URL, directory, requested name) keys at once; keys without a record
    /// are left out.
    func find(_ keys: [DownloadKey]) throws -> [DownloadRecord]
    /// Inserts or replaces many records in one transaction (queueing thousands of URLs). A record
    /// whose id `expecting` names replaces the stored one only while that is still as it was read
    /// (the same ``DownloadRecord/Version``).
    ///
    /// - Throws: A retryable ``SwoopError/Code/store`` error, with nothing saved, when another
    ///   process added a record of the same key meanwhile, or changed one `expecting` names
    ///   (``SwoopError/keyTaken(_:)``): the caller reads again and reuses it.
    func save(contentsOf records: [DownloadRecord], expecting: [Download.ID: DownloadRecord.Version]) throws
    /// Records progress: the hot path.
    func checkpoint(id: Download.ID, committedBytes: Int, syncedBytes: Int, bootID: String, bytesPerSecond: Double) throws
    /// Records the progress of a download over several connections: its segments and their sums.
    func checkpoint(id: Download.ID, segments: [Segment], bootID: String, bytesPerSecond: Double) throws
    /// Every record, in queue order (priority, then position, then age).
    func all() throws -> [DownloadRecord]
    /// The records with these ids that exist, in the order given (a daemon's page of its list).
    func records(ids: [Download.ID]) throws -> [DownloadRecord]
    /// The records in these states, in queue order.
    func records(in states: Set<Download.State>) throws -> [DownloadRecord]
    /// How many records there are in each state (a state with none is left out).
    func counts() throws -> [Download.State: Int]
    /// Every record's id.
    func ids() throws -> [Download.ID]
    /// Deletes a record.
    func delete(id: Download.ID) throws
    /// Deletes many records (in one transaction where the store has them).
    func delete(ids: [Download.ID]) throws
    /// Replaces a download's settings, and nothing else: a transfer's updates never write them, so
    /// this is how they change while it runs. A record that is gone stays gone.
    func update(settings: DownloadSettings, id: Download.ID) throws
    /// Leaves a control for the process transferring its download (``DownloadControl``).
    func post(_ control: PostedControl) throws
    /// Every control left and not withdrawn, answered or not, oldest first.
    func controls() throws -> [PostedControl]
    /// Records the answer of the process that ran the download.
    func answer(_ token: String, _ answer: PostedControl.Answer) throws
    /// Removes a control (its caller has its answer, or stopped waiting).
    func withdraw(_ token: String) throws
    /// Releases the store's resources; later calls may fail.
    func close() throws
    /// Whether records survive the process (and, saved durably, a power loss). A transfer with a
    /// store that keeps nothing makes each rename durable itself.
    var isDurable: Bool { get }
}

extension DownloadStore {
    /// ``markActive(ids:at:)`` of one download.
    public func markActive(id: Download.ID, at date: Date) throws {
        try markActive(ids: [id], at: date)
    }

    public func unfinished(directory: String, fileNames: [String]) throws -> [DownloadRecord] {
        try fileNames.compactMap { try unfinished(directory: directory, fileName: $0) }
    }

    public func checkpoint(id: Download.ID, segments: [Segment], bootID: String, bytesPerSecond: Double) throws {
        guard var record = try record(id: id) else { return }
        record.segments = segments
        record.committedBytes = segments.reduce(0) { $0 + $1.written }
        record.syncedBytes = segments.reduce(0) { $0 + $1.synced }
        record.bootID = bootID
        record.bytesPerSecond = bytesPerSecond
        try save(record, durable: false)
    }

    public func save(_ record: DownloadRecord, durable: Bool) throws {
        try save(record)
    }

    public func claim(_ record: DownloadRecord) throws -> DownloadRecord? {
        if let owner = try holder(of: record) { return owner }
        try update(record, durable: false)
        return nil
    }

    /// Another unfinished download (not completed or removed) that names `record`'s file, if any:
    /// what refuses a claim.
    public func holder(of record: DownloadRecord) throws -> DownloadRecord? {
        guard let fileName = record.fileName else { return nil }
        return try unfinished(directory: record.directory, fileName: fileName).flatMap { $0.id == record.id ? nil : $0 }
    }

    public func update(contentsOf records: [DownloadRecord], claiming: Set<Download.ID>, durable: Bool) -> [Result<Void, SwoopError>] {
        records.map { record in
            Result {
                try withStoreErrors {
                    if claiming.contains(record.id), let owner = try holder(of: record) { throw SwoopError.nameTaken(record, by: owner) }
                    try update(record, durable: durable)
                }
            }.mapError(SwoopError.wrapping)
        }
    }

    /// ``update(contentsOf:claiming:durable:)`` claiming none.
    public func update(contentsOf records: [DownloadRecord], durable: Bool) -> [Result<Void, SwoopError>] {
        update(contentsOf: records, claiming: [], durable: durable)
    }

    /// Deletes many records.
    public func delete(ids: [Download.ID]) throws {
        for id in ids { try delete(id: id) }
    }

    public func find(_ keys: [DownloadKey]) throws -> [DownloadRecord] {
        try keys.compactMap { try find(url: $0.url, directory: $0.directory, requestedName: $0.requestedName) }
    }

    /// ``save(contentsOf:expecting:)`` of records read by no one: each inserted or replaced.
    public func save(contentsOf records: [DownloadRecord]) throws {
        try save(contentsOf: records, expecting: [:])
    }

    public func save(contentsOf records: [DownloadRecord], expecting: [Download.ID: DownloadRecord.Version]) throws {
        // A record gone meanwhile is inserted again, as the stores' own batches do.
        for record in records {
            if let version = expecting[record.id], let current = try self.record(id: record.id), current.version != version {
                throw SwoopError.changedMeanwhile(record.id)
            }
        }
        for record in records { try save(record) }
    }

    public func close() throws {}

    public func records(ids: [Download.ID]) throws -> [DownloadRecord] {
        try ids.compactMap { try record(id: $0) }
    }

    public func records(in states: Set<Download.State>) throws -> [DownloadRecord] {
        try all().filter { states.contains($0.state) }
    }

    public func counts() throws -> [Download.State: Int] {
        try all().reduce(into: [:]) { $0[$1.state, default: 0] += 1 }
    }

    public func ids() throws -> [Download.ID] {
        try all().map(\.id)
    }

    /// A store that cannot pass requests between the managers that share it.
    public func post(_ control: PostedControl) throws {
        throw SwoopError(.inUse, "download \(control.id) is running in another manager, and this store cannot pass requests to it")
    }

    public func controls() throws -> [PostedControl] { [] }

    public func answer(_ token: String, _ answer: PostedControl.Answer) throws {}

    public func withdraw(_ token: String) throws {}

    public var isDurable: Bool { false }
}

extension SwoopError {
    /// A batch of new records refused: another process added a download of the same key (URL,
    /// directory, requested name) since the batch was read. Retryable: read again, reuse it.
    public static func keyTaken(_ cause: SwoopError) -> SwoopError {
        SwoopError(.store, "another swoop process added some of these downloads meanwhile: \(cause.message)", cause: cause, isRetryable: true)
    }

    /// A batch refused: `id`, read for it, was changed by another process since (its
    /// ``DownloadRecord/Version``). Retryable as ``keyTaken(_:)``.
    public static func changedMeanwhile(_ id: Download.ID) -> SwoopError {
        keyTaken(SwoopError(.store, "download \(id) was changed meanwhile"))
    }

    /// A claim refused: `owner`, another unfinished download, names `record`'s file.
    public static func nameTaken(_ record: DownloadRecord, by owner: DownloadRecord) -> SwoopError {
        SwoopError(.destinationExists, "\(record.partPath ?? record.directory) is in use by the download of \(owner.url)")
    }
}
