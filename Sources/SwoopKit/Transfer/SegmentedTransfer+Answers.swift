import AsyncHTTPClient
import Foundation

// A segment's request and what its answer must show before a byte of it is written.

extension SegmentedTransfer {
    /// Asks a source for the rest of a segment (with `If-Range`), for ``accept(_:for:from:)`` to check.
    func request(_ segment: Segment, from index: Int) async throws -> HTTPClientResponse.Body {
        let saved = expected(from: index).saved
        var headers = context.headers
        headers.append(("Range", "bytes=\(segment.next)-\(segment.end - 1)"))
        if let validator = saved.strongETag ?? saved.lastModified { headers.append(("If-Range", validator)) }
        let response = try await context.client.swoopGet(
            source(index), headers: headers, configuration: context.configuration, logger: context.logger,
            slow: context.throttle.isSlow
        )
        return try await accept(response, for: segment, from: index)
    }

    /// The body of a source's answer for the rest of a segment, once it shows the download's
    /// representation: by its validators, and from a source that did not write the saved bytes by
    /// its ``SourceProof`` too. A mirror's mismatch is `MirrorRefused`.
    func accept(_ response: HTTPClientResponse, for segment: Segment, from index: Int) async throws -> HTTPClientResponse.Body {
        let expectation = expected(from: index)
        let proof = expectation.proof
        var saved = expectation.saved
        saved.offset = segment.next
        let url = source(index)
        let head = ResponseHead(response)
        if head.status == 206, let proof, let refusal = proof.refusal(of: head, saved: context.saved) {
            await response.body.drain()
            if index > 0 { throw MirrorRefused(reason: mirrorReason(refusal)) }
            throw SegmentRestart(reason: "\(url.absoluteString) is not the file the saved bytes are from: \(refusal)")
        }
        do {
            return try await check(response, head: head, segment: segment, saved: saved, url: url, mirror: index > 0)
        } catch let restart as SegmentRestart where index > 0 {
            throw MirrorRefused(reason: mirrorReason(restart.reason))
        }
    }

    /// What source `index`'s answers must show: its proof (a mirror's, or the URL's when it did not
    /// write the saved bytes) and the validators that proof compares.
    private func expected(from index: Int) -> (proof: SourceProof?, saved: SavedRepresentation) {
        let proof = index > 0 ? context.mirrorProof : context.urlProof
        return (proof, proof?.asked(context.saved) ?? context.saved)
    }

    /// Why a mirror is refused, with what would let a mirror with its own ETag serve the file.
    private func mirrorReason(_ reason: String) -> String {
        guard context.mirrorProof == .strongETag, reason.hasPrefix("its ETag") else { return reason }
        return reason + " (with --checksum, a mirror of the same length would do)"
    }

    /// The body of an answer that continues the segment, or the restart (or status error) it means.
    /// A segment is always asked as a range: a 2xx other than 206 is a server that ignores ranges
    /// or, under If-Range, another file (the file changed on the server; from a `mirror`, its
    /// file is not the download's).
    private func check(
        _ response: HTTPClientResponse, head: ResponseHead, segment: Segment, saved: SavedRepresentation, url: URL, mirror: Bool
    ) async throws -> HTTPClientResponse.Body {
        if head.status != 206, (200..<300).contains(head.status) {
            await response.body.drain()
            if let etag = saved.strongETag, let other = head.etag, other != etag {
                throw SegmentRestart(reason: mirror ? "its ETag \(other) is not the download's \(etag)" : "the file changed on the server (ETag \(etag) → \(other))")
            }
            throw SegmentRestart(reason: "the server sent the whole file (\(head.status)) instead of the range")
        }
        switch ResumeDecision.decide(head, saved: saved) {
        case .write(let offset, let total, let restartReason) where offset == segment.next && restartReason == nil:
            guard total == context.saved.totalBytes else {
                await response.body.drain()
                throw SegmentRestart(reason: "the file changed on the server (length \(context.saved.totalBytes ?? -1) → \(total ?? -1) bytes)")
            }
            return response.body
        case .write(_, _, let reason):
            await response.body.drain()
            throw SegmentRestart(reason: reason ?? "the server answered another range than asked")
        case .restart(let reason):
            await response.body.drain()
            throw SegmentRestart(reason: reason)
        case .complete:
            await response.body.drain()
            throw SegmentRestart(reason: "the server's length no longer matches the saved segments")
        case .status(let status):
            await response.body.drain()
            throw SwoopError.httpStatus(status, url: url.absoluteString, retryAfter: response.headers.first(name: "Retry-After"))
        }
    }
}
