import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Fetches one part of a file a fleet downloads into a shared directory: a ranged GET with
/// `If-Range` from where the part's earlier holders flushed to, each answer checked to be exactly
/// the rest of this part of the same file before a byte is written (``CataloguePart/refusal(status:contentRange:etag:from:url:)``),
/// the bytes written at their offsets in the shared part file and flushed every few MiB. What is
/// flushed is what the heartbeat reports (``flushed``): a node that takes the part over later
/// fetches again at most what was written and not yet flushed.
final class SharedPartTransfer: Sendable {
    let part: CataloguePart
    let request: DownloadRequest
    let configuration: Configuration
    let client: HTTPClientPool
    let logger: Logger
    /// Bytes of this part flushed to the file, and the recent speed.
    private let state: NIOLockedValueBox<(flushed: Int, bytesPerSecond: Double)>
    /// How much is written between flushes.
    let flushEvery: Int

    init(
        part: CataloguePart, flushed: Int, flushEvery: Int, request: DownloadRequest, configuration: Configuration, client: HTTPClientPool,
        logger: Logger
    ) {
        self.part = part
        self.flushEvery = max(1, flushEvery)
        self.request = request
        self.configuration = configuration
        self.client = client
        self.logger = logger
        self.state = NIOLockedValueBox((min(max(0, flushed), part.count), 0))
    }

    /// Bytes of this part known to be on disk.
    var flushed: Int { state.withLockedValue { $0.flushed } }
    var bytesPerSecond: Double { state.withLockedValue { $0.bytesPerSecond } }

    /// Fetches the rest of the part. Retries what fails on the way (a connection, a server error)
    /// as a download does; an answer that is another file's, or not this range, ends it at once.
    func run() async throws {
        let fd = open(part.path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw SwoopError(.fileSystem, "the shared part file \(part.path) is gone") }
            throw SwoopError.fileSystem("open", path: part.path, errno: errno)
        }
        defer { close(fd) }
        let backoff = Backoff(policy: configuration.retry)
        var failures = 0
        while flushed < part.count {
            do {
                try Task.checkCancellation()
                try await fetch(into: fd)
                failures = 0
            } catch let error as SwoopError where !error.isRetryable {
                // What a retry cannot mend: another file, a refusal, the disk.
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                failures += 1
                guard failures <= configuration.retry.maxRetries else { throw error }
                let delay = backoff.delay(beforeRetry: failures, retryAfter: nil, jitter: Double.random(in: 0..<1))
                logger.debug("part retry", metadata: ["part.path": "\(part.path)", "part.start": "\(part.start)", "error": "\(error)"])
                try await Task.sleep(for: delay)
            }
        }
    }

    /// One request for the rest of the part; what it wrote is flushed before it returns or throws.
    private func fetch(into fd: Int32) async throws {
        let offset = part.start + flushed
        var headers = request.headers + [("Range", "bytes=\(offset)-\(part.end)")]
        if let validator = part.ifRange { headers.append(("If-Range", validator)) }
        let response = try await client.swoopGet(request.url, headers: headers, configuration: configuration, logger: logger)
        let status = Int(response.status.code)
        if status != 200, status != 206 {
            // Retried as a download's would be when the server may answer later; else the end.
            let retryable = status >= 500 || status == 408 || status == 429
            throw SwoopError(.httpStatus, "\(request.url.absoluteString) answered HTTP \(status)", status: status, isRetryable: retryable)
        }
        if let refusal = part.refusal(
            status: Int(response.status.code), contentRange: response.headers.first(name: "Content-Range"),
            etag: SavedRepresentation.strong(response.headers.first(name: "ETag")), from: offset, url: request.url.absoluteString
        ) {
            // Not a byte of it is written; its connection goes with it (the body may be the whole file).
            throw SwoopError(.invalidResponse, refusal)
        }
        var position = offset
        var unflushed = 0
        let started = ContinuousClock.now
        do {
            for try await buffer in response.body {
                // A part stopped here (lost, paused) writes nothing more.
                try Task.checkCancellation()
                let count = buffer.readableBytes
                guard position + count <= part.end + 1 else {
                    throw SwoopError(.invalidResponse, "\(request.url.absoluteString) sent more than the range asked for")
                }
                let at = position
                let failure = try await DiskWork.run {
                    buffer.withUnsafeReadableBytes { WriteAll.write(fd, $0, at: at) }
                }
                if let failure { throw SwoopError.fileSystem("write", path: part.path, errno: failure) }
                position += count
                unflushed += count
                let elapsed = (ContinuousClock.now - started).seconds
                if elapsed > 0 { state.withLockedValue { $0.bytesPerSecond = Double(position - offset) / elapsed } }
                if unflushed >= flushEvery {
                    try await flush(fd, upTo: position)
                    unflushed = 0
                }
            }
        } catch {
            try? await flush(fd, upTo: position)
            throw error
        }
        try await flush(fd, upTo: position)
        guard position == part.end + 1 else {
            throw SwoopError(
                .network, "\(request.url.absoluteString) ended the range at \(position) of \(part.start)-\(part.end)", isRetryable: true
            )
        }
    }

    /// Flushes the file and records that this part holds everything up to `position`.
    private func flush(_ fd: Int32, upTo position: Int) async throws {
        let failure = try await DiskWork.run { fdatasync(fd) == 0 ? nil : errno }
        if let failure { throw SwoopError.fileSystem("flush", path: part.path, errno: failure) }
        state.withLockedValue { $0.flushed = max($0.flushed, position - part.start) }
    }
}

