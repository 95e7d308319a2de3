import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A file a fleet downloads in parts into a shared directory: what the server says of it (one
/// `Range: bytes=0-0` request), its part file made at its full length, and its finish once every
/// part is flushed (length, checksum, rename). The I/O beside ``FleetMember``'s decisions.
struct SharedFile: Sendable {
    /// What the probe learned: the file's length, name and validators.
    struct Probe: Sendable, Equatable {
        var length: Int
        var fileName: String
        var etag: String?
        var lastModified: String?
    }

    /// Asks for the first byte. `nil` when the file cannot be split: no range answered, no length,
    /// or nothing that proves later answers come from the same file (neither a strong ETag nor a
    /// Last-Modified).
    static func probe(_ request: DownloadRequest, configuration: Configuration, client: HTTPClientPool, logger: Logger) async throws -> Probe? {
        let headers = request.headers + [("Range", "bytes=0-0")]
        let response = try await client.swoopGet(request.url, headers: headers, configuration: configuration, logger: logger)
        // One byte, or (a server without ranges) the start of the whole file, dropped with its connection.
        await response.body.drain()
        guard response.status.code == 206,
            let range = response.headers.first(name: "Content-Range").flatMap(ContentRange.init(parsing:)), let length = range.total
        else { return nil }
        let etag = SavedRepresentation.strong(response.headers.first(name: "ETag"))
        let lastModified = response.headers.first(name: "Last-Modified")
        guard etag != nil || lastModified != nil else { return nil }
        let name = request.fileName ?? FileNaming.suggestedName(contentDisposition: response.headers.first(name: "Content-Disposition"), url: request.url)
        return Probe(length: length, fileName: name, etag: etag, lastModified: lastModified)
    }

    /// The parts of `probe`'s file in `directory`, at the full length, and the part file when this
    /// call created it.
    ///
    /// Under `own` when this download had that name already and no finished file holds it: its
    /// part file reused (the one the node that ran it whole left), or, for a split made again
    /// (`generation`), a new one of its own beside the name. Else under the first of `name`,
    /// `name.1`, … whose final and part files are both free (made with `O_EXCL`: another
    /// download's part file is never shared).
    static func prepare(_ probe: Probe, in directory: String, partSize: Int, own: String?, generation: Int?) throws -> ([CataloguePart], made: String?) {
        var chosen: (name: String, path: String, fd: Int32, made: Bool)?
        if let own, !FileSystem.exists(directory + "/" + own) {
            let path = directory + "/" + FileNaming.partFileName(for: own) + (generation.map { ".\($0)" } ?? "")
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw SwoopError.fileSystem("create", path: path, errno: errno) }
            chosen = (own, path, fd, generation != nil)
        }
        var attempt = 0
        while chosen == nil {
            guard attempt < 10_000 else { throw SwoopError(.destinationExists, "no free file name for \(probe.fileName) in \(directory)") }
            let name = FileNaming.candidate(probe.fileName, attempt: attempt)
            attempt += 1
            if FileSystem.exists(directory + "/" + name) { continue }
            let path = directory + "/" + FileNaming.partFileName(for: name)
            let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if fd >= 0 {
                chosen = (name, path, fd, true)
            } else if errno != EEXIST {
                throw SwoopError.fileSystem("create", path: path, errno: errno)
            }
        }
        guard let (name, path, fd, made) = chosen else { throw SwoopError(.destinationExists, "no free file name for \(probe.fileName)") }
        defer { close(fd) }
        guard ftruncate(fd, off_t(probe.length)) == 0 else { throw SwoopError.fileSystem("size", path: path, errno: errno) }
        let parts = CataloguePart.ranges(length: probe.length, size: partSize).map { range in
            CataloguePart(
                path: path, fileName: name, start: range.lowerBound, end: range.upperBound, length: probe.length, etag: probe.etag,
                lastModified: probe.lastModified
            )
        }
        return (parts, made ? path : nil)
    }

    /// Finishes the file once every part's holder flushed it: the part file must have the whole
    /// length (and the checksum, when one was given); it is flushed once more, as this node sees
    /// it, and renamed to its final name, which it never replaces.
    static func finish(_ part: CataloguePart, checksum: Checksum?) throws {
        let final = (part.path as NSString).deletingLastPathComponent + "/" + part.fileName
        guard let size = FileSystem.sizeAndModified(part.path)?.size else {
            // Finished already by a node that held the download before (and lost it as it renamed).
            if FileSystem.sizeAndModified(final)?.size == part.length { return }
            throw SwoopError(.fileSystem, "the shared part file \(part.path) is gone")
        }
        guard size == part.length else {
            throw SwoopError(.invalidResponse, "the shared part file \(part.path) has \(size) bytes, not \(part.length)")
        }
        if let checksum {
            let digest = try Checksum.digest(of: part.path, algorithm: checksum.algorithm)
            guard digest == checksum.hex else {
                throw SwoopError(.checksumMismatch, "\(part.fileName): \(checksum.algorithm.rawValue) is \(digest), not \(checksum.hex)")
            }
        }
        let fd = open(part.path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw SwoopError.fileSystem("open", path: part.path, errno: errno) }
        let synced = fsync(fd) == 0 ? 0 : errno
        close(fd)
        guard synced == 0 else { throw SwoopError.fileSystem("flush", path: part.path, errno: synced) }
        try FileSystem.publish(part.path, as: final, replace: false)
        _ = FileSystem.syncDirectory((part.path as NSString).deletingLastPathComponent)
    }
}
