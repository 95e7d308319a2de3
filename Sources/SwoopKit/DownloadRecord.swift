import Foundation

/// What the store keeps about one download: enough to resume it after a crash and to recognise it
/// when the same command runs again.
///
/// Durability rule: `committedBytes` counts bytes already handed to the kernel with `pwrite`, so they
/// survive a process crash; `syncedBytes` counts bytes known to be on disk (`fdatasync`), the only
/// ones trusted after a machine crash, which a different `bootID` reveals.
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

    /// How many bytes of the part file may be trusted, given the boot we are in now.
    public func trustedBytes(currentBootID: String) -> Int {
        bootID == currentBootID ? committedBytes : min(syncedBytes, committedBytes)
    }

    /// The snapshot of this record.
    public func snapshot(bytesPerSecond: Double = 0) -> Download {
        Download(
            id: id, url: url, destination: destinationPath, state: state, totalBytes: totalBytes,
            completedBytes: state == .completed ? (finalSize ?? committedBytes) : committedBytes,
            bytesPerSecond: bytesPerSecond, error: lastError
        )
    }
}

/// Where the manager keeps its records. SwoopStore provides the SQLite implementation;
/// ``InMemoryDownloadStore`` keeps nothing on disk.
///
/// Calls are synchronous and must be cheap: ``checkpoint(id:committedBytes:syncedBytes:bootID:)``
/// runs on the download's hot path about once per MiB.
public protocol DownloadStore: Sendable {
    /// The record for this URL, directory and requested name, if any.
    func find(url: String, directory: String, requestedName: String) throws -> DownloadRecord?
    /// The record with this id, if any.
    func record(id: Download.ID) throws -> DownloadRecord?
    /// An unfinished record (not completed or removed) whose file in `directory` is `fileName`.
    func unfinished(directory: String, fileName: String) throws -> DownloadRecord?
    /// Inserts or replaces a record.
    func save(_ record: DownloadRecord) throws
    /// Records progress: the hot path.
    func checkpoint(id: Download.ID, committedBytes: Int, syncedBytes: Int, bootID: String) throws
    /// Every record, oldest first.
    func all() throws -> [DownloadRecord]
    /// Deletes a record.
    func delete(id: Download.ID) throws
}
