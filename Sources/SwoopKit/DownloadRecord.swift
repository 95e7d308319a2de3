import Foundation

/// What the store keeps about one download: enough to resume it after a crash and to recognise it
/// when the same command runs again.
///
/// Durability rule: `committedBytes` counts bytes already handed to the kernel with `pwrite`, so they
/// survive a process crash; `syncedBytes` counts bytes known to be on disk (`fdatasync`), the only
/// ones trusted after a machine crash, which a different `bootID` reveals. Within the same boot the
/// part file's own length is trusted too: Swoop writes it front to back, and the validators reach the
/// store before the first byte of a representation reaches the file (see `trustedBytes`).
///
/// The request's options (`headers`, `collisionPolicy`, `checksum`) are kept so that `swoop resume`
/// can continue a download exactly as it was asked for; `priority` and `position` give the queue order.
public struct DownloadRecord: Sendable, Codable, Hashable {
    public var id: Download.ID
    /// The URL as the user gave it.
    public var url: String
    /// The absolute directory the file goes to.
    public var directory: String
    /// The file name the user asked for (`-o`), or "" to take it from the server.
    public var requestedName: String
    /// The final file's name inside `directory`, once chosen.
    public var fileName: String?
    public var state: Download.State
    /// The full length, when the server told it.
    public var totalBytes: Int?
    /// Bytes handed to the kernel at the part file's start (survive a process crash).
    public var committedBytes: Int
    /// Bytes known to be on disk (survive a machine crash).
    public var syncedBytes: Int
    /// The boot the counters were written in (`/proc/sys/kernel/random/boot_id`).
    public var bootID: String
    /// The validators of the representation being downloaded.
    public var etag: String?
    public var lastModified: String?
    /// The final file's size and modification time when it was completed, to notice later changes.
    public var finalSize: Int?
    public var finalModified: Double?
    /// The expected checksum, as given ("sha-256=HEX").
    public var checksum: String?
    public var lastError: String?
    /// Extra request headers of this download (kept for resuming; they may hold credentials, so the
    /// state directory is private to its user).
    public var headers: [HTTPHeaderField]
    /// What to do when the final name is taken.
    public var collisionPolicy: CollisionPolicy
    /// Higher runs first; equal priorities run in `position` order.
    public var priority: Int
    /// The order downloads were queued in (smaller first).
    public var position: Int
    /// The speed at the last checkpoint, for readers in other processes (`swoop ls`); 0 when not active.
    public var bytesPerSecond: Double
    /// The byte ranges of a download over several connections, with their progress; `nil` for a
    /// download written front to back by one connection (then `committedBytes` says how far).
    public var segments: [Segment]?
    public var createdAt: Date
    public var updatedAt: Date

    /// Creates a record for a download that has not started.
    public init(
        id: Download.ID = .make(), url: String, directory: String, requestedName: String, bootID: String,
        checksum: String? = nil, now: Date = Date()
    ) {
        self.id = id
        self.url = url
        self.directory = directory
        self.requestedName = requestedName
        self.fileName = nil
        self.state = .waiting
        self.totalBytes = nil
        self.committedBytes = 0
        self.syncedBytes = 0
        self.bootID = bootID
        self.checksum = checksum
        self.headers = []
        self.collisionPolicy = .rename
        self.priority = 0
        self.position = 0
        self.bytesPerSecond = 0
        self.segments = nil
        self.createdAt = now
        self.updatedAt = now
    }

    /// The final path, once the name is chosen.
    public var destinationPath: String? {
        fileName.map { (directory as NSString).appendingPathComponent($0) }
    }

    /// The part file's path, once the name is chosen.
    public var partPath: String? {
        fileName.map { (directory as NSString).appendingPathComponent(FileNaming.partFileName(for: $0)) }
    }

    /// How many bytes of a part file of `fileSize` bytes may be trusted, given the boot we are in now.
    ///
    /// In the same boot everything `pwrite` handed to the kernel is still there, even if the process
    /// died before recording it, so the file's length counts (up to the total). After a reboot only
    /// bytes known to be flushed do.
    public func trustedBytes(fileSize: Int, currentBootID: String) -> Int {
        if bootID == currentBootID {
            return min(fileSize, totalBytes ?? Int.max)
        }
        return min(syncedBytes, committedBytes, fileSize)
    }

    /// Whether the file at `path` is the one this download completed: the size and modification
    /// time recorded with the completion (a rename keeps both, so the part file counts too).
    func isCompletedFile(at path: String) -> Bool {
        guard let now = FileSystem.sizeAndModified(path) else { return false }
        return now.size == finalSize && now.modified == finalModified
    }

    /// The request this record was made from (to run it again).
    public func request() throws -> DownloadRequest {
        var request = try DownloadRequest(url: url, directory: directory, fileName: requestedName.isEmpty ? nil : requestedName)
        request.headers = headers.map { ($0.name, $0.value) }
        request.collisionPolicy = collisionPolicy
        request.checksum = try checksum.map { try Checksum(parsing: $0) }
        request.priority = priority
        return request
    }

    /// The snapshot of this record.
    public func snapshot(bytesPerSecond: Double = 0) -> Download {
        Download(
            id: id, url: url, destination: destinationPath, state: state, totalBytes: totalBytes,
            completedBytes: state == .completed ? (finalSize ?? committedBytes) : committedBytes,
            bytesPerSecond: bytesPerSecond, error: lastError, priority: priority
        )
    }
}

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
    /// Marks a waiting download active, for `ls` while its first request is under way. A record in
    /// any other state is left alone.
    func markActive(id: Download.ID, at date: Date) throws
    /// The records for many (URL, directory, requested name) keys at once; keys without a record
    /// are left out.
    func find(_ keys: [DownloadKey]) throws -> [DownloadRecord]
    /// Inserts or replaces many records in one transaction (queueing thousands of URLs).
    func save(contentsOf records: [DownloadRecord]) throws
    /// Records progress: the hot path.
    func checkpoint(id: Download.ID, committedBytes: Int, syncedBytes: Int, bootID: String, bytesPerSecond: Double) throws
    /// Records the progress of a download over several connections: its segments and their sums.
    func checkpoint(id: Download.ID, segments: [Segment], bootID: String, bytesPerSecond: Double) throws
    /// Every record, in queue order (priority, then position, then age).
    func all() throws -> [DownloadRecord]
    /// Deletes a record.
    func delete(id: Download.ID) throws
    /// Deletes many records (in one transaction where the store has them).
    func delete(ids: [Download.ID]) throws
    /// Releases the store's resources; later calls may fail.
    func close() throws
    /// Whether records survive the process (and, saved durably, a power loss). A transfer with a
    /// store that keeps nothing makes each rename durable itself.
    var isDurable: Bool { get }
}

extension DownloadStore {
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

    /// Deletes many records.
    public func delete(ids: [Download.ID]) throws {
        for id in ids { try delete(id: id) }
    }

    public func find(_ keys: [DownloadKey]) throws -> [DownloadRecord] {
        try keys.compactMap { try find(url: $0.url, directory: $0.directory, requestedName: $0.requestedName) }
    }

    public func save(contentsOf records: [DownloadRecord]) throws {
        for record in records { try save(record) }
    }

    public func close() throws {}

    public var isDurable: Bool { false }
}

/// What identifies a download in the store: the same URL to the same directory under the same
/// requested name is the same download.
public struct DownloadKey: Sendable, Hashable {
    public var url: String
    public var directory: String
    /// The name given with `-o` (or in a `-i` list), or "".
    public var requestedName: String

    public init(url: String, directory: String, requestedName: String) {
        self.url = url
        self.directory = directory
        self.requestedName = requestedName
    }
}

extension DownloadRecord {
    /// The record's identifying key.
    public var key: DownloadKey { DownloadKey(url: url, directory: directory, requestedName: requestedName) }
}

/// One request header, as stored.
public struct HTTPHeaderField: Sendable, Codable, Hashable {
    public var name: String
    public var value: String
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
