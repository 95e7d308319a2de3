import Foundation

// Re-checking a completed download (`swoop get --refresh`, wget -N, curl -z): a conditional request,
// and when the file changed, a new download beside the old file, which is replaced only once the
// new one is complete (the rename of every download).

extension Transfer {
    /// Whether the server has another file than the completed one: `If-None-Match` with its ETag,
    /// `If-Modified-Since` with its Last-Modified. A `304` is "unchanged"; a `2xx` is a change;
    /// another status is that error. With neither validator there is nothing to compare: changed.
    func changedOnServer(_ done: Download) async throws -> Bool {
        let path = done.destination ?? record.url
        var conditions: [(name: String, value: String)] = []
        if let etag = record.etag { conditions.append(("If-None-Match", etag)) }
        if let lastModified = record.lastModified { conditions.append(("If-Modified-Since", lastModified)) }
        guard !conditions.isEmpty else {
            emit(.notice(done, "no ETag or Last-Modified to check \(path) against: downloading it again"))
            return true
        }
        let response = try await send(extraHeaders: conditions)
        await response.body.drain()
        switch response.status.code {
        case 304:
            emit(.notice(done, "\(path) is unchanged on the server"))
            return false
        case 200..<300 where Self.sameVersion(ResponseHead(response), as: record):
            // A server that ignores conditional requests, answering with the same version.
            emit(.notice(done, "\(path) is unchanged on the server"))
            return false
        case 200..<300:
            emit(.notice(done, "\(record.url) changed on the server: downloading it again (\(path) stays until the new one is complete)"))
            return true
        default:
            throw SwoopError.httpStatus(Int(response.status.code), url: record.url, retryAfter: response.headers.first(name: "Retry-After"))
        }
    }

    /// Whether an answer names the version `record` completed: its strong ETag, else (no ETag on
    /// either side) its Last-Modified date and length.
    static func sameVersion(_ head: ResponseHead, as record: DownloadRecord) -> Bool {
        if let etag = record.strongETag { return head.etag == etag }
        guard record.etag == nil, head.etag == nil, let date = record.lastModified else { return false }
        return head.lastModified == date && head.contentLength == record.finalSize
    }

    /// Turns the completed record into a fresh download of the same file name: its part file
    /// beside the old file, which it replaces when complete (so `overwrite`, stored: a resume after
    /// an interruption must replace it too).
    func beginRefresh() throws {
        record.state = try DownloadStateMachine.next(after: record.state, on: .invalidate).get()
        (record.committedBytes, record.syncedBytes, record.totalBytes, record.segments) = (0, 0, nil, nil)
        (record.etag, record.lastModified, record.finalSize, record.finalModified) = (nil, nil, nil, nil)
        record.movedFrom = nil
        record.collisionPolicy = .overwrite
        options.collisionPolicy = .overwrite
        record.bootID = bootID
        try storeCall { try store.update(record, durable: true) }
        try reopenPartFile()
    }
}
