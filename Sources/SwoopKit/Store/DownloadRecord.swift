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
/// The request's options (`headers`, `collisionPolicy`, `checksum`, `settings`) are kept so that
/// `swoop resume`, a rerun or another process continues a download exactly as it was asked for;
/// `priority` and `position` give the queue order.
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
    /// What kind of error `lastError` is: ``SwoopError/Code``'s name, with `:STATUS` for an HTTP
    /// status (`httpStatus:404`), so that a daemon can report aria2's error code after a restart.
    public var lastErrorCode: String?
    /// The URL the saved bytes came from, while the record's URL (it moved: a re-signed link,
    /// `changeURL`) has not yet proven that it serves their file (see ``SourceChange``). Stored, so
    /// that the proof is still asked after a pause, a crash or a restart.
    public var movedFrom: String?
    /// Extra request headers of this download (kept for resuming; they may hold credentials, so the
    /// state directory is private to its user).
    public var headers: [HTTPHeaderField]
    /// What to do when the final name is taken.
    public var collisionPolicy: CollisionPolicy
    /// The download's own settings (connections, rate limit, retries, timeouts, proxy). A transfer
    /// never writes them (``DownloadStore/update(settings:id:)`` does), so a change made while it
    /// runs is not undone by its progress updates.
    public var settings: DownloadSettings
    /// More URLs of the same file (``DownloadRequest/mirrors``); written by saves, not by a
    /// transfer's updates.
    public var mirrors: [String]
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
        self.settings = DownloadSettings()
        self.mirrors = []
        self.priority = 0
        self.position = 0
        self.bytesPerSecond = 0
        self.segments = nil
        self.createdAt = now
        self.updatedAt = now
    }

    /// The stored ETag when it is a strong one (a weak one proves no byte, RFC 9110 §8.8.3).
    var strongETag: String? { SavedRepresentation.strong(etag) }

    /// Records `error` (or clears the last one).
    public mutating func setLastError(_ error: SwoopError?) {
        lastError = error?.message
        lastErrorCode = error.map { error in error.status.map { "\(error.code):\($0)" } ?? error.code.description }
    }

    /// The final path, once the name is chosen.
    public var destinationPath: String? {
        fileName.map { PathNames.join(directory, $0) }
    }

    /// The part file's path, once the name is chosen.
    public var partPath: String? {
        fileName.map { PathNames.join(directory, FileNaming.partFileName(for: $0)) }
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

    /// The snapshot of this record.
    public func snapshot(bytesPerSecond: Double = 0) -> Download {
        Download(
            id: id, url: url, destination: destinationPath, state: state, totalBytes: totalBytes,
            completedBytes: state == .completed ? (finalSize ?? committedBytes) : committedBytes,
            bytesPerSecond: bytesPerSecond, error: lastError, priority: priority
        )
    }
}
