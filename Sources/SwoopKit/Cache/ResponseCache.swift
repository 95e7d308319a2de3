import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The disk cache behind ``DownloadManager/data(from:headers:)``: one directory, one entry per URL.
///
/// ## Layout
///
/// For a URL whose sha-256 hex is `K`:
/// - `K.json`: the metadata (``Metadata``): URL, status, cache-relevant header fields, request and
///   response times, the body's file name, size and sha-256, and the last access.
/// - `K.G.body`: the body, where `G` is random and new for every store. A body file is written once,
///   under a name nobody else uses, and never changed afterwards.
/// - `.tmp-*`: files being written.
///
/// ## The commit rule
///
/// Storing writes the body to a temporary file and renames it to its fresh `K.G.body` name, then
/// writes the metadata to a temporary file and renames it over `K.json`, then deletes the body the
/// old metadata named. **The rename of `K.json` is the only commit point**, and metadata only ever
/// names a body that was complete before the metadata was written. A crash before it leaves the old
/// entry intact (plus an orphan body); a crash after it leaves the new entry intact (plus the old
/// body as an orphan). A new body is never paired with old metadata, because a body is never
/// replaced in place: old metadata can only name the old body.
///
/// Nothing is `fsync`ed: a machine crash may leave a renamed file whose data never reached the disk.
/// That is why every read checks the body's size and sha-256 against the metadata: a mismatched,
/// truncated, missing or unreadable entry is a miss, and is removed, never returned.
///
/// ## Several processes
///
/// Processes share the directory without locks. Renames are atomic, so a reader sees either the
/// old or the new `K.json`, never a mix, and the body it names is immutable. The races that remain
/// lose work but never corrupt: two stores of one URL leave the last rename's entry (the other body
/// is an orphan); an access-time update racing a store may put back metadata whose body the store
/// just deleted, which the next read finds missing and removes (a miss); eviction racing a store may
/// remove the new entry. Orphan bodies and temporary files older than ``orphanAge`` are deleted
/// during eviction (younger ones may belong to a store in progress).
struct ResponseCache: Sendable {
    /// What is stored about one response.
    struct Metadata: Codable, Sendable, Hashable {
        /// The format version; other versions are misses.
        var version = Metadata.currentVersion
        /// The URL the entry was requested by (the key's preimage, checked on read).
        var url: String
        /// The HTTP status (always 200 today).
        var status: Int
        /// The cache-relevant header fields (lower-case names), see ``CachePolicy/relevantHeaders(_:)``:
        /// validators (`etag`, `last-modified`) and freshness (`cache-control`, `expires`, `date`, `age`).
        var headers: [String: String]
        /// When the request was sent.
        var requestTime: Date
        /// When the response (or the last `304`) arrived; the stored-at time.
        var responseTime: Date
        /// The body's file name in the cache directory.
        var bodyFile: String
        /// The body's length in bytes.
        var size: Int
        /// The body's sha-256, lower-case hex.
        var sha256: String
        /// When the entry was last stored or served; eviction removes the oldest first.
        var lastAccess: Date

        static let currentVersion = 1

        /// The freshness rules for this entry.
        var policy: CachePolicy {
            CachePolicy(headers: headers, requestTime: requestTime, responseTime: responseTime)
        }
    }

    /// A stored response whose body matched its metadata when read.
    struct Entry: Sendable {
        var metadata: Metadata
        var body: Data
    }

    /// Orphan bodies and temporary files younger than this are left alone (a store may be between
    /// its two renames).
    static let orphanAge: TimeInterval = 600

    /// The cache directory.
    let directory: String
    /// The most body bytes kept.
    let maxBytes: Int

    /// The file-name key of `url`: its sha-256, lower-case hex.
    static func key(for url: String) -> String { Hashing.sha256Hex(url) }

    /// Creates the directory if needed.
    ///
    /// - Throws: ``SwoopError`` naming the directory when it cannot be created or is not writable.
    func prepare() throws {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw SwoopError(.fileSystem, "cannot create the cache directory \(directory): \(error.localizedDescription)", cause: error)
        }
        try FileSystem.checkWritableDirectory(directory)
    }

    // MARK: - Reading

    /// The entry for `url` with a verified body, or `nil` when there is none or it is damaged (then it
    /// is removed).
    func lookup(_ url: String) -> Entry? {
        let key = Self.key(for: url)
        guard let metadataBytes = try? readFile(metadataPath(key), limit: 1 << 20) else { return nil }
        guard let metadata = Self.decode(metadataBytes), metadata.url == url, isBodyName(metadata.bodyFile, key: key),
            let body = try? readFile(path(metadata.bodyFile), limit: metadata.size),
            body.count == metadata.size, Hashing.hex(SHA256.hash(data: body)) == metadata.sha256
        else {
            removeDamaged(key: key, metadataBytes: metadataBytes)
            return nil
        }
        return Entry(metadata: metadata, body: body)
    }

    /// Removes a damaged entry, unless another process replaced its metadata meanwhile.
    private func removeDamaged(key: String, metadataBytes: Data) {
        guard (try? readFile(metadataPath(key), limit: 1 << 20)) == metadataBytes else { return }
        unlink(metadataPath(key))
        if let metadata = Self.decode(metadataBytes), isBodyName(metadata.bodyFile, key: key) {
            unlink(path(metadata.bodyFile))
        }
    }

    // MARK: - Writing

    /// Stores a response for `url`, replacing any earlier one, then evicts beyond ``maxBytes``.
    ///
    /// - Returns: The stored metadata.
    /// - Throws: ``SwoopError`` naming the file that could not be written.
    @discardableResult
    func store(
        url: String, status: Int, headers: [String: String], body: Data, requestTime: Date, responseTime: Date,
        now: Date = Date()
    ) throws -> Metadata {
        let key = Self.key(for: url)
        let bodyFile = "\(key).\(Self.randomSuffix()).body"
        try writeAtomically(body, to: path(bodyFile))
        let metadata = Metadata(
            url: url, status: status, headers: headers, requestTime: requestTime, responseTime: responseTime,
            bodyFile: bodyFile, size: body.count, sha256: Hashing.hex(SHA256.hash(data: body)), lastAccess: now
        )
        let previous = (try? readFile(metadataPath(key), limit: 1 << 20)).flatMap(Self.decode)
        do {
            try writeMetadata(metadata, key: key)
        } catch {
            unlink(path(bodyFile))
            throw error
        }
        if let previous, previous.bodyFile != bodyFile, isBodyName(previous.bodyFile, key: key) {
            unlink(path(previous.bodyFile))
        }
        evict(keeping: key, now: now)
        return metadata
    }

    /// Rewrites an entry's metadata (after a `304`, or to record an access). The body stays as it is.
    ///
    /// - Throws: ``SwoopError`` naming the file that could not be written.
    func update(_ metadata: Metadata) throws {
        try writeMetadata(metadata, key: Self.key(for: metadata.url))
    }

    /// Removes the entry for `url`, if any: metadata first, so no reader finds it half gone.
    func remove(_ url: String) {
        let key = Self.key(for: url)
        let metadata = (try? readFile(metadataPath(key), limit: 1 << 20)).flatMap(Self.decode)
        unlink(metadataPath(key))
        if let metadata, isBodyName(metadata.bodyFile, key: key) { unlink(path(metadata.bodyFile)) }
    }

    // MARK: - Eviction

    /// Removes least-recently-used entries until the bodies fit in ``maxBytes`` (never `keeping`),
    /// unreadable metadata, and orphan bodies and temporary files older than ``orphanAge``.
    func evict(keeping: String? = nil, now: Date = Date()) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        // Each entry counted by what its body holds on disk, not by what its metadata says: a
        // damaged entry's size can be any number (Int.max summed to a trap); a lookup removes it.
        var entries: [(key: String, metadata: Metadata, size: Int)] = []
        for name in names where name.hasSuffix(".json") && !name.hasPrefix(".") {
            let key = String(name.dropLast(".json".count))
            if let metadata = (try? readFile(path(name), limit: 1 << 20)).flatMap(Self.decode) {
                let size = isBodyName(metadata.bodyFile, key: key) ? FileSystem.sizeAndModified(path(metadata.bodyFile))?.size ?? 0 : 0
                entries.append((key, metadata, size))
            } else if isOld(path(name), now: now) {
                unlink(path(name))
            }
        }
        let referenced = Set(entries.map(\.metadata.bodyFile))
        for name in names where (name.hasSuffix(".body") && !referenced.contains(name)) || name.hasPrefix(".tmp-") {
            if isOld(path(name), now: now) { unlink(path(name)) }
        }
        var total = entries.reduce(0) { $0 + $1.size }
        for entry in entries.sorted(by: { ($0.metadata.lastAccess, $0.key) < ($1.metadata.lastAccess, $1.key) }) {
            guard total > maxBytes else { break }
            guard entry.key != keeping else { continue }
            unlink(metadataPath(entry.key))
            if isBodyName(entry.metadata.bodyFile, key: entry.key) { unlink(path(entry.metadata.bodyFile)) }
            total -= entry.size
        }
    }

    // MARK: - Files

    private func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    private func metadataPath(_ key: String) -> String { path(key + ".json") }

    /// Whether `name` is a body file of `key` (so metadata on disk can never point outside the cache).
    private func isBodyName(_ name: String, key: String) -> Bool {
        name.hasPrefix(key + ".") && name.hasSuffix(".body") && !name.contains("/")
    }

    private func isOld(_ path: String, now: Date) -> Bool {
        guard let modified = FileSystem.sizeAndModified(path)?.modified else { return false }
        return now.timeIntervalSince1970 - modified > Self.orphanAge
    }

    private static func randomSuffix() -> String {
        Hashing.hex((0..<8).map { _ in UInt8.random(in: .min ... .max) })
    }

    private static func decode(_ bytes: Data) -> Metadata? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        guard let metadata = try? decoder.decode(Metadata.self, from: bytes),
            metadata.version == Metadata.currentVersion, metadata.size >= 0
        else { return nil }
        return metadata
    }

    private func writeMetadata(_ metadata: Metadata, key: String) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        let bytes: Data
        do {
            bytes = try encoder.encode(metadata)
        } catch {
            throw SwoopError(.fileSystem, "cannot encode the cache metadata for \(metadata.url): \(error)", cause: error)
        }
        try writeAtomically(bytes, to: metadataPath(key))
    }

    /// Writes `bytes` to a new temporary file in the cache directory and renames it to `target`.
    private func writeAtomically(_ bytes: Data, to target: String) throws {
        let temporary = path(".tmp-\(Self.randomSuffix())")
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SwoopError.fileSystem("create", path: temporary, errno: errno) }
        var failure = bytes.withUnsafeBytes { WriteAll.write(fd, $0) }
        if close(fd) != 0 && failure == nil { failure = errno }
        if let failure {
            unlink(temporary)
            throw SwoopError.fileSystem("write to", path: temporary, errno: failure)
        }
        guard rename(temporary, target) == 0 else {
            let code = errno
            unlink(temporary)
            throw SwoopError.fileSystem("rename \(temporary) to", path: target, errno: code)
        }
    }

    /// Reads a whole file of at most `limit` bytes; a bigger one is an error (damaged, for the caller).
    private func readFile(_ path: String, limit: Int) throws -> Data {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SwoopError.fileSystem("open", path: path, errno: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw SwoopError.fileSystem("stat", path: path, errno: errno) }
        let size = Int(info.st_size)
        guard size <= limit else { throw SwoopError(.fileSystem, "\(path) is larger than expected (\(size) bytes)") }
        var data = Data(count: size)
        var done = 0
        try data.withUnsafeMutableBytes { raw in
            while done < size {
                let n = read(fd, raw.baseAddress! + done, size - done)
                if n < 0 && errno == EINTR { continue }
                if n < 0 { throw SwoopError.fileSystem("read", path: path, errno: errno) }
                if n == 0 { break }
                done += n
            }
        }
        return data.prefix(done)
    }
}
