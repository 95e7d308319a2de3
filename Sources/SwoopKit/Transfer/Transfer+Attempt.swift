import AsyncHTTPClient
import Foundation
import NIOCore

// Attempts and retries: one request, what its answer means (``ResumeDecision``), and starting over.

extension Transfer {
    func transferWithRetries() async throws -> Download {
        var retries = Retries(policy: configuration.retry)
        // Active from the first connection attempt to the end, backoff sleeps included. The first
        // save of progress records it; one whose first answer is slow to come is marked active for
        // other processes (`swoop ls`) after a moment, so a small download writes one record less.
        try transition(.start)
        context.activeMarks.add(record.id, after: configuration.durability.activeMarkDelay)
        defer { context.activeMarks.remove(record.id) }
        // How far any attempt got: only getting further resets the retry count.
        var furthest = offset
        // The sources given up on, and why: named in the error when the last one fails too.
        var dropped: [String] = []
        while true {
            let furthestBefore = furthest
            do {
                try Task.checkCancellation()
                if try await attempt() {
                    // Flush, verify, a durable save and the rename: on a disk thread, in a group.
                    return try await finish()
                }
                continue
            } catch let error as CancellationError {
                throw await interrupted(by: error)
            } catch {
                let swoopError = classify(error)
                if swoopError.code == .cancelled || Task.isCancelled {
                    throw await interrupted(by: error)
                }
                if swoopError.code == .destinationExists, swoopError.isRetryable {
                    // A waiting claim refused (`giveUpPendingName`): another name, at once.
                    emit(.notice(snapshot(), swoopError.message))
                    continue
                }
                furthest = max(furthest, offset)
                let decision = retries.decide(after: swoopError, progressed: furthest > furthestBefore, jitter: Double.random(in: 0..<1))
                guard case .retry(let delay, let attempt, let most) = decision else {
                    // A URL that fails for good gives way to a mirror while any is left.
                    let reason = Self.shortReason(swoopError.message, url: url.absoluteString)
                    if ErrorClassifier.isSourceFailure(swoopError), !spareSources.isEmpty {
                        let next = spareSources.removeFirst()
                        emit(.notice(snapshot(), "dropping \(url.absoluteString): \(reason); trying mirror \(next.absoluteString)"))
                        dropped.append("\(url.absoluteString) (\(reason))")
                        if offset > 0 || record.segments != nil {
                            // The saved bytes are kept only if the mirror proves it serves their file.
                            movedFrom = url.absoluteString
                            sourceProof = mirrorProof
                        }
                        url = next
                        retries = Retries(policy: configuration.retry)
                        continue
                    }
                    var final = swoopError
                    if !dropped.isEmpty, ErrorClassifier.isSourceFailure(swoopError) {
                        final.message += "; before it, " + dropped.joined(separator: ", ")
                    }
                    throw await stop(final, on: .fail)
                }
                do {
                    try await onDisk { try $0.saveProgress(error: swoopError) }
                } catch let refused as SwoopError where refused.code == .destinationExists && refused.isRetryable {
                    // The waiting claim this save made was refused: the next attempt takes another name.
                    emit(.notice(snapshot(), refused.message))
                } catch {
                    // Progress not saved: the retry goes on, the next save records it.
                }
                retrying = Download.Retry(attempt: attempt, maxRetries: most, reason: Self.shortReason(swoopError.message, url: url.absoluteString))
                emit(.notice(snapshot(), "\(swoopError.message); retrying in \(ByteFormatting.delay(delay.seconds)) (\(attempt)/\(most))"))
                do {
                    try await Task.sleep(for: delay)
                } catch {
                    throw await interrupted(by: error)
                }
            }
        }
    }

    /// An error message without the URL the board's line already names: "cannot connect to URL:
    /// Connection refused" is "Connection refused", "HTTP 503 Service Unavailable from URL" is
    /// "HTTP 503 Service Unavailable"; a message that reads otherwise stays whole.
    static func shortReason(_ message: String, url: String) -> String {
        guard let range = message.range(of: url) else { return message }
        let after = message[range.upperBound...]
        if after.hasPrefix(": ") { return String(after.dropFirst(2)) }
        guard after.isEmpty else { return message }
        var before = String(message[..<range.lowerBound])
        for ending in [" from ", " to ", " with "] where before.hasSuffix(ending) {
            before.removeLast(ending.count)
            return before
        }
        return message
    }

    /// Ends the run as paused or interrupted: the task was cancelled (a pause, Ctrl-C, shutdown)
    /// during `cause`.
    func interrupted(by cause: any Error) async -> SwoopError {
        await stop(SwoopError(.cancelled, "download of \(record.url) interrupted", cause: cause), on: context.stopRequest())
    }

    /// Ends the run: moves the state by ``DownloadStateMachine`` (`pause`, `interrupt` or `fail`),
    /// saves progress with the error, publishes the terminal event (``DownloadEvent/paused(_:)``
    /// for a pause or an interruption: the snapshot's state says which) and returns the error to throw.
    ///
    /// The record is `active` here (the run started it); were a transition ever refused, the state
    /// stays as it is rather than being forced.
    func stop(_ error: SwoopError, on request: DownloadStateMachine.Request) async -> SwoopError {
        try? transition(request)
        _ = try? await onDisk { try $0.saveProgress(error: request == .fail ? error : nil) }
        let snapshot = snapshot()
        emit(request == .fail ? .failed(snapshot, error) : .paused(snapshot))
        return error
    }

    /// A restart's reason, naming the URL the download moved from when its first answer shows
    /// another file (once).
    func movedReason(_ reason: String) -> String {
        guard let from = movedFrom else { return reason }
        movedFrom = nil
        return "\(url.absoluteString) is not the file \(from) was: \(reason)"
    }

    /// One request. Returns `true` when the part file holds the whole file, `false` to go again at
    /// once (after a restart from zero).
    func attempt() async throws -> Bool {
        // A new attempt: no longer waiting to retry.
        retrying = nil
        if let segments = record.segments, let total = record.totalBytes, part != nil {
            // A download already split into segments continues on all its connections at once.
            announceContinuation(from: offset, of: total)
            emit(.started(snapshot()))
            return try await runSegments(SegmentPlan(total: total, segments: segments), first: nil)
        }
        var saved = SavedRepresentation(
            offset: offset, totalBytes: record.totalBytes, etag: record.etag, lastModified: record.lastModified
        )
        // A source that did not write the saved bytes is asked only what its proof compares.
        var asked = sourceProof?.asked(saved) ?? saved
        var rangeHeaders = ResumeDecision.rangeHeaders(for: asked)
        let probing = offset == 0 && rangeHeaders?.isEmpty == true && configuration.segments.maxConnections > 1 && !probeRefused
        // The mirrors' first pieces, asked with the probe (never for a download whose URL must
        // first prove its file); whatever the answer does not use is dropped.
        var early: EarlyRanges?
        defer { early?.discard() }
        if probing {
            // A bounded first range tells whether the server honours ranges (206) and the length,
            // without pulling more than one segment's worth down this connection.
            rangeHeaders = [("Range", "bytes=0-\(configuration.segments.minSplitSize - 1)")]
            if sourceProof == nil, !spareSources.isEmpty, !askedEarly {
                // Once: a retried probe does not ask the mirrors again.
                askedEarly = true
                early = askEarly()
            }
        }
        if rangeHeaders == nil {
            emit(.notice(snapshot(), "cannot validate the saved bytes of \(record.url) (no ETag, Last-Modified or length); starting over"))
            try await onDisk { try $0.resetToZero() }
            saved.offset = 0
            asked.offset = 0
            rangeHeaders = []
        }
        let response = try await send(extraHeaders: rangeHeaders ?? [])
        let head = ResponseHead(response)
        if saved.offset > 0, head.status == 206, let refusal = sourceProof?.refusal(of: head, saved: saved) {
            // Not contradicting the saved bytes is not enough: another source must prove their file.
            await response.body.drain()
            let why = movedReason(refusal)
            try await onDisk { try $0.restart(because: why) }
            return false
        }
        switch ResumeDecision.decide(head, saved: asked) {
        case .status(416) where probing:
            await response.body.drain()
            probeRefused = true
            return false
        case .status(let status):
            await response.body.drain()
            throw SwoopError.httpStatus(status, url: url.absoluteString, retryAfter: response.headers.first(name: "Retry-After"))
        case .complete:
            await response.body.drain()
            return true
        case .restart(let reason):
            await response.body.drain()
            let why = movedReason(reason)
            try await onDisk { try $0.restart(because: why) }
            return false
        case .write(let start, let total, let restartReason):
            if let restartReason {
                // The body that follows is the whole file: no extra request, so no restart budget spent.
                emit(.notice(snapshot(), "\(movedReason(restartReason)); starting over from 0"))
                try await onDisk { try $0.resetToZero() }
            } else if let from = movedFrom, start > 0 {
                emit(.notice(snapshot(), "\(url.absoluteString) serves the same file as \(from) (ETag \(record.etag ?? "none")): continuing from \(ByteFormatting.format(start))"))
            } else if start > 0 {
                announceContinuation(from: start, of: total)
            }
            continuesEarlierRun = false
            movedFrom = nil
            // Proven (or started over): the record's URL is the bytes' own source from now on.
            if url.absoluteString == record.url { record.movedFrom = nil }
            // A record that names no representation and no progress (a fresh download, or one
            // durably reset to zero) can be rolled back by a power loss without harm: the bytes that
            // follow are then attributed to nothing. Only then may the save below skip the flush.
            let blank = record.etag == nil && record.lastModified == nil && record.committedBytes == 0 && record.segments == nil
            // A fresh download claims its file once the record holds what this answer says: the
            // claim writes it (see `claimFile`).
            let claiming = part == nil
            if !claiming, start == 0, restartReason == nil {
                // A whole body into a part file that may hold more (an earlier attempt's bytes past
                // a lowered offset): nothing beyond what this body writes may remain. The cut waits
                // for a background flush that may be running: on a disk thread.
                try await onDisk { try $0.part?.truncate(to: 0) }
            }
            let unclaimed = record
            record.totalBytes = total
            // A 206 that omits validators continues the saved representation: keep what we know.
            // A mirror that proved the saved bytes continues them: the URL's validators stay the
            // download's (a URL the download moved to is its own source from now on).
            if start == 0 || sourceProof == nil || url.absoluteString == record.url {
                record.etag = head.etag ?? (start > 0 ? record.etag : nil)
                record.lastModified = head.lastModified ?? (start > 0 ? record.lastModified : nil)
            }
            record.setLastError(nil)
            offset = start
            var plan = splitPlan(start: start, total: total, status: head.status)
            if let pieces = early {
                if plan != nil, start == 0, let total {
                    plan = SegmentPlan.initial(
                        total: total, pieces: 1 + pieces.asked, pieceSize: pieces.pieceSize, connections: configuration.segments.maxConnections,
                        minSplitSize: configuration.segments.minSplitSize
                    )
                } else {
                    pieces.discard()
                    early = nil
                }
            }
            record.segments = plan?.segments ?? record.segments
            if claiming {
                // A fresh small file's claim waits for its finishing group's transaction.
                let deferring = blank && start == 0 && plan == nil && early == nil && total.map { $0 <= Self.deferredClaimLimit } == true
                do {
                    try claimFile(response: response, deferring: deferring)
                } catch {
                    // Nothing of this answer is kept for a file that was never had.
                    record = unclaimed
                    throw error
                }
            }
            // The validators reach the store before the first byte of this representation reaches the file.
            if let plan {
                // From zero the segments' requests go out while the record is saved (no byte is
                // written before); bytes in front are flushed with it first.
                var recorded: Task<Void, any Error>?
                if start == 0 {
                    recorded = saveInBackground()
                } else {
                    try await onDisk { try $0.saveProgress(error: nil) }
                }
                emit(.started(snapshot()))
                return try await runSegments(plan, first: response.body, at: start, recorded: recorded, early: early)
            }
            if !blank {
                try await onDisk { try $0.saveProgress(error: nil) }
            } else if !claiming {
                // (A claim wrote the record itself.) A power loss that rolls this back names nothing.
                try saveProgress(error: nil, durable: false)
            }
            claimNotFlushed = blank
            emit(.started(snapshot()))
            try await stream(response.body)
            if probing, let total, offset < total, let range = head.contentRange.flatMap(ContentRange.init(parsing:)),
                offset == range.end + 1
            {
                // The bounded probe ended where it should and no split applies: go on from here.
                return false
            }
            if let total, offset < total {
                throw SwoopError(.network, "connection closed early: got \(offset) of \(total) bytes from \(url.absoluteString)", isRetryable: true)
            }
            return true
        }
    }

    /// Asks each mirror a connection would use for its piece of the file (``EarlyRanges``), to go
    /// with the probe's first piece.
    func askEarly() -> EarlyRanges {
        let mirrors = Array(spareSources.prefix(max(0, configuration.segments.maxConnections - 1)))
        let (client, configuration, logger, slow) = (context.client, configuration, context.logger, throttle.isSlow)
        let headers = requestHeaders
        return EarlyRanges(mirrors: mirrors, pieceSize: configuration.segments.minSplitSize) { mirror, range in
            try await client.swoopGet(mirror, headers: headers + [("Range", range)], configuration: configuration, logger: logger, slow: slow)
        }
    }

    func restart(because reason: String) throws {
        restarts += 1
        guard restarts <= Self.maxRestarts else {
            throw SwoopError(.invalidResponse, "giving up on \(record.url): it keeps changing (\(reason))")
        }
        emit(.notice(snapshot(), "\(reason); starting over from 0"))
        try resetToZero()
    }

    func resetToZero() throws {
        forgetBytes()
        try writeRecord(durable: true)
        try part?.truncate(to: 0)
    }

    /// Forgets, in memory, every byte saved so far and what was known of the file.
    func forgetBytes() {
        offset = 0
        // What follows is all the current URL's own.
        sourceProof = nil
        record.movedFrom = nil
        segmented = nil
        record.segments = nil
        record.totalBytes = nil
        record.etag = nil
        record.lastModified = nil
        record.committedBytes = 0
        record.syncedBytes = 0
    }

    /// Says once that this run continues the bytes an earlier one left (`continuesEarlierRun`).
    func announceContinuation(from start: Int, of total: Int?) {
        guard continuesEarlierRun else { return }
        continuesEarlierRun = false
        let of = total.map { " of \(ByteFormatting.format($0))" } ?? ""
        emit(.notice(snapshot(), "continuing \(record.destinationPath ?? record.url) from \(ByteFormatting.format(start))\(of)"))
    }

    /// Sends a GET with the configured headers, the request's and `extraHeaders` (the range).
    func send(extraHeaders: [(name: String, value: String)]) async throws -> HTTPClientResponse {
        try await context.client.swoopGet(
            url, headers: requestHeaders + extraHeaders, configuration: configuration, logger: context.logger,
            slow: throttle.isSlow
        )
    }
}
