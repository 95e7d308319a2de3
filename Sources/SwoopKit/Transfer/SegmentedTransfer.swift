import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Why a segmented download must start over from zero: a connection saw a different
/// representation (the file changed on the server, or the server stopped honouring ranges).
struct SegmentRestart: Error, Sendable {
    var reason: String
}

/// A mirror answered with another file than the download's (its length or ETag differ, or it
/// ignores ranges): it is dropped, never written from.
struct MirrorRefused: Error, Sendable {
    var reason: String
}

/// Downloads the unfinished segments of one file over several connections, each writing its bytes
/// with `pwrite` at their offsets into the one part file. Decisions (what to claim, what to steal)
/// are ``SegmentPlan``'s; this type does the I/O and keeps the shared state under one lock.
///
/// Durability follows the single-stream rules per segment: a checkpoint is recorded before a write
/// would leave more than `checkpointBytes` of a segment unrecorded (so a crash costs at most that
/// per connection), at least every `checkpointInterval`, and a background `fdatasync` every
/// `syncInterval` raises each segment's `synced` to what it had written when the flush began.
final class SegmentedTransfer: Sendable {
    struct Context: Sendable {
        var client: HTTPClientPool
        var configuration: Configuration
        var logger: Logger
        /// The download's URL.
        var url: URL
        /// More URLs of the same file; connections are spread over `url` and these.
        var mirrors: [URL] = []
        /// What a mirror's answers must show: the download's strong ETag (sent as `If-Range`), or,
        /// when a checksum verifies the result, a matching length.
        var mirrorProof: SourceProof = .strongETag
        /// What the URL's own answers must show, when it did not write the saved bytes (a download
        /// moved to it, or a mirror that took over): nothing else proves it serves their file.
        var urlProof: SourceProof?
        /// Says something the user should know (a mirror dropped, and why).
        var notice: @Sendable (String) -> Void = { _ in }
        /// The request's headers (configured and per-download), without range headers.
        var headers: [(name: String, value: String)]
        var part: PartFile
        var store: any DownloadStore
        var recordID: Download.ID
        var bootID: String
        /// The validators every segment's response must match.
        var saved: SavedRepresentation
        /// The download's rate limits, shared by all its connections.
        var throttle: Throttle = .none
        /// Reports progress: (bytes done, speed, live connections).
        var progress: @Sendable (Int, Double, Int) -> Void
        /// The durable save of the record these bytes are written under (its validators and
        /// segments), when it is still under way: the connections send their requests meanwhile, and
        /// no byte is written before it is done.
        var recorded: Task<Void, any Error>? = nil
    }

    private struct State {
        var plan: SegmentPlan
        /// Segments a connection is working on, by start.
        var busy: Set<Int> = []
        /// How far each busy segment's connection has reserved bytes to write.
        var reservedUpTo: [Int: Int] = [:]
        /// How fast each busy segment's connection has written, since it took the segment.
        var paces: [Int: SegmentPace] = [:]
        /// Each segment's `written` at the last checkpoint.
        var recorded: [Int: Int] = [:]
        /// Each segment's `written` when its disk writeback was last started.
        var writeback: [Int: Int] = [:]
        var lastCheckpoint = ContinuousClock.now
        var lastSync = ContinuousClock.now
        var lastProgress = ContinuousClock.now
        var meter = SpeedMeter()
        var connections = 0
        /// Sources (0 is the URL, then the mirrors) no longer used: they failed or served another file.
        var dropped: Set<Int> = []
    }

    let context: Context
    private let state: NIOLockedValueBox<State>

    init(plan: SegmentPlan, context: Context) {
        self.context = context
        var initial = State(plan: plan)
        for segment in plan.segments { initial.recorded[segment.start] = segment.written }
        // The meter's first sample is the start (see `Transfer.stream`).
        initial.meter.record(bytes: plan.completedBytes, at: initial.lastProgress)
        if !context.mirrors.isEmpty, context.mirrorProof == .strongETag, context.saved.strongETag == nil {
            // Nothing would prove that a mirror serves the same bytes.
            initial.dropped = Set(1...context.mirrors.count)
            context.notice("not using the mirrors of \(context.url.absoluteString): it gives no strong ETag to check them against (a --checksum would)")
        }
        self.state = NIOLockedValueBox(initial)
    }

    /// The URL of each source: 0 is the download's, then the mirrors.
    func source(_ index: Int) -> URL { index == 0 ? context.url : context.mirrors[index - 1] }

    /// The source a connection uses: `preferred` while it is live, else the next live one.
    private func liveSource(preferring preferred: Int) -> Int? {
        let count = context.mirrors.count + 1
        return state.withLockedValue { state in
            (0..<count).map { (preferred + $0) % count }.first { !state.dropped.contains($0) }
        }
    }

    /// Stops using a source (saying so once). Returns `false` (keeping it) when it is the last one left.
    private func drop(_ index: Int, because reason: String) -> Bool {
        let (gone, now) = state.withLockedValue { state -> (Bool, Bool) in
            if state.dropped.contains(index) { return (true, false) }
            guard state.dropped.count < context.mirrors.count else { return (false, false) }
            state.dropped.insert(index)
            return (true, true)
        }
        if now {
            let url = source(index).absoluteString
            context.notice("dropping \(index == 0 ? "the URL" : "mirror") \(url): \(Transfer.shortReason(reason, url: url)); its segments go to the other sources")
        }
        return gone
    }

    /// The plan as it stands (for saving when the transfer stops).
    var plan: SegmentPlan { state.withLockedValue { $0.plan } }

    /// Runs `connections` connections until every segment is written.
    ///
    /// - Parameters:
    ///   - first: An open response body for the segment starting at `firstAt` (the probe request's,
    ///     at 0, or a resumed single connection's, where it had got to).
    ///   - firstAt: Where `first` starts.
    ///   - early: Pieces asked of the mirrors with the probe: each is the first segment of the
    ///     connection that uses its mirror (see ``EarlyRanges``).
    /// - Throws: ``SegmentRestart`` when a response shows another representation; a non-retryable
    ///   ``SwoopError`` when a connection exhausted its retries; `CancellationError`.
    func run(connections: Int, first: HTTPClientResponse.Body?, firstAt: Int = 0, early: EarlyRanges? = nil) async throws {
        // The first body belongs to the segment at its start: claim it for the first connection
        // before any other connection can; so does each early piece for its mirror's connection.
        let preclaimed = first == nil ? nil : claim(preferring: firstAt)
        var pieces: [Int: (segment: Segment, response: Task<HTTPClientResponse, any Error>)] = [:]
        if let early {
            for index in 1..<max(1, connections) where index <= context.mirrors.count {
                guard let piece = early.take(source: index) else { continue }
                if !state.withLockedValue({ $0.dropped.contains(index) }), let segment = claim(exactly: piece.start) {
                    pieces[index] = (segment, piece.response)
                } else {
                    piece.drop()
                }
            }
            early.discard()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<max(1, connections) {
                let body = index == 0 ? first : nil
                let segment = index == 0 ? preclaimed : pieces[index]?.segment
                let response = pieces[index]?.response
                group.addTask {
                    try await self.connection(index: index, first: body, at: firstAt, preclaimed: segment, asked: response)
                }
            }
            do {
                try await group.waitForAll()
            } catch {
                group.cancelAll()
                throw error
            }
        }
        // Every segment written: the finish that follows flushes the file and records it completed
        // (a checkpoint here would only start a flush that the finish's own flush waits behind).
        let plan = self.plan
        guard plan.isComplete else {
            throw SwoopError(
                .network, "the connections to \(context.url.absoluteString) ended with \(plan.total - plan.completedBytes) bytes left",
                isRetryable: true
            )
        }
    }

    // MARK: - One connection

    /// - Parameter asked: The answer to the request for `preclaimed` sent early (an ``EarlyRanges`` piece).
    private func connection(
        index: Int, first: HTTPClientResponse.Body?, at firstAt: Int, preclaimed: Segment?,
        asked: Task<HTTPClientResponse, any Error>? = nil
    ) async throws {
        // Connections are spread over the sources; the first one's body (the probe's) is the URL's.
        var sourceIndex = index % (context.mirrors.count + 1)
        var pending = first
        var early = asked
        // A piece asked early whose answer this connection never came to read is not waited for.
        defer { early?.cancel() }
        var claimed = preclaimed
        var retries = Retries(policy: context.configuration.retry)
        state.withLockedValue { $0.connections += 1 }
        defer { state.withLockedValue { $0.connections -= 1 } }
        while let segment = claimed ?? claim(preferring: nil) {
            claimed = nil
            let before = written(segmentAt: segment.start)
            do {
                try Task.checkCancellation()
                let body: HTTPClientResponse.Body
                let isFirst = pending != nil && segment.start == firstAt && segment.next == firstAt
                if let open = pending, isFirst {
                    body = open
                } else if let response = early {
                    // The piece asked with the probe: its answer is checked as a segment's.
                    early = nil
                    let answer = try await withTaskCancellationHandler {
                        try await response.value
                    } onCancel: {
                        response.cancel()
                    }
                    body = try await accept(answer, for: segment, from: sourceIndex)
                } else {
                    if let open = pending { await open.drain() }
                    sourceIndex = liveSource(preferring: sourceIndex) ?? 0
                    body = try await request(segment, from: sourceIndex)
                }
                let wasProbe = isFirst && firstAt == 0
                pending = nil
                let finished = try await stream(body, segmentAt: segment.start)
                release(segment.start)
                if !finished {
                    // The probe covered only the first bytes: carry on with this segment. Any other
                    // body that ends before its range did is a connection closed early.
                    guard wasProbe else {
                        throw SwoopError(.network, "connection closed early while downloading \(context.url.absoluteString)", isRetryable: true)
                    }
                    claimed = claim(preferring: segment.start)
                    continue
                }
                retries.reset()
            } catch let error as SegmentRestart {
                release(segment.start)
                throw error
            } catch let refused as MirrorRefused {
                release(segment.start)
                pending = nil
                // A mirror serving another file is never written from. The last source left refusing
                // ends the download with its progress kept (the URL was dropped before: no restart).
                guard drop(sourceIndex, because: refused.reason) else {
                    throw SwoopError(.invalidResponse, "no source left serves the file: \(refused.reason)", isRetryable: false)
                }
            } catch {
                release(segment.start)
                pending = nil
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                let swoopError = ErrorClassifier.classify(error, url: source(sourceIndex).absoluteString, timeouts: context.configuration.timeouts)
                let decision = retries.decide(
                    after: swoopError, progressed: written(segmentAt: segment.start) > before, jitter: Double.random(in: 0..<1)
                )
                guard case .retry(let delay, _, _) = decision else {
                    // A source that keeps failing loses its segments to the others while any is left;
                    // a local failure (the disk) is no source's.
                    if ErrorClassifier.isSourceFailure(swoopError), drop(sourceIndex, because: swoopError.message) {
                        retries = Retries(policy: context.configuration.retry)
                        continue
                    }
                    // The whole download stops here; the transfer's own retries must not multiply these.
                    var final = swoopError
                    final.isRetryable = false
                    throw final
                }
                try await Task.sleep(for: delay)
            }
        }
    }

    private func written(segmentAt start: Int) -> Int {
        state.withLockedValue { $0.plan.segment(at: start)?.written ?? 0 }
    }

    /// The segment this connection works on next: `preferring` when free, else an unclaimed one,
    /// else half of the largest busy one; `nil` when nothing is left worth taking.
    private func claim(preferring start: Int?) -> Segment? {
        state.withLockedValue { state in
            if let start, let segment = Self.free(start, in: state) { return Self.take(segment, in: &state) }
            if let free = state.plan.unclaimed(busy: state.busy) { return Self.take(free, in: &state) }
            let now = ContinuousClock.now
            let keeps = state.paces.reduce(into: [Int: Int]()) { keeps, entry in
                keeps[entry.key] = entry.value.inFlight(written: state.plan.segment(at: entry.key)?.written ?? 0, at: now)
            }
            guard
                let stolen = state.plan.steal(
                    busy: state.busy, reservedUpTo: state.reservedUpTo, keeps: keeps,
                    minSplitSize: context.configuration.segments.minSplitSize
                )
            else { return nil }
            state.recorded[stolen.start] = 0
            return Self.take(stolen, in: &state)
        }
    }

    /// The unfinished segment starting at `start`, when nobody works on it.
    private func claim(exactly start: Int) -> Segment? {
        state.withLockedValue { state in Self.free(start, in: state).map { Self.take($0, in: &state) } }
    }

    /// Marks `segment` as a connection's: busy, with nothing reserved past where it stands.
    private static func take(_ segment: Segment, in state: inout State) -> Segment {
        state.busy.insert(segment.start)
        state.reservedUpTo[segment.start] = segment.next
        state.paces[segment.start] = SegmentPace(at: .now, written: segment.written)
        return segment
    }

    /// The segment at `start` when it is unfinished and nobody works on it.
    private static func free(_ start: Int, in state: State) -> Segment? {
        guard let segment = state.plan.segment(at: start), !segment.isFinished, !state.busy.contains(start) else { return nil }
        return segment
    }

    private func release(_ start: Int) {
        state.withLockedValue { state in
            state.busy.remove(start)
            state.reservedUpTo[start] = nil
            state.paces[start] = nil
        }
    }

    /// Writes a body into its segment until the segment's end, which another connection may have
    /// moved closer meanwhile (then the rest of this body is dropped with its connection).
    /// - Returns: Whether the segment is finished (else the body ended first).
    private func stream(_ body: HTTPClientResponse.Body, segmentAt start: Int) async throws -> Bool {
        var unrecorded = context.recorded
        for try await buffer in body {
            if let save = unrecorded {
                try await save.value
                unrecorded = nil
            }
            // Paid for before it is written (and before its place is reserved): the bytes on disk
            // follow the limit, with no lead of one read per connection at the start, none lost at
            // the end as connections finish.
            try await context.throttle.consume(buffer.readableBytes)
            var chunk = buffer
            // Reserve before writing: a connection stealing this segment's tail splits after it.
            let position = state.withLockedValue { state -> (at: Int, count: Int)? in
                guard let segment = state.plan.segment(at: start) else { return nil }
                let at = state.reservedUpTo[start] ?? segment.next
                let count = min(chunk.readableBytes, segment.end - at)
                guard count > 0 else { return nil }
                state.reservedUpTo[start] = at + count
                return (at, count)
            }
            guard let position else { return true }
            if position.count < chunk.readableBytes {
                chunk = chunk.getSlice(at: chunk.readerIndex, length: position.count) ?? chunk
            }
            try context.part.write(chunk, at: position.at)
            try recordWrite(segmentAt: start, bytes: position.count)
        }
        return state.withLockedValue { $0.plan.segment(at: start)?.isFinished ?? true }
    }

    private func recordWrite(segmentAt start: Int, bytes: Int) throws {
        let now = ContinuousClock.now
        let (due, report, writeback) = state.withLockedValue { state -> (Bool, (Int, Double, Int)?, Range<Int>?) in
            state.plan.recordWrite(segmentAt: start, bytes: bytes)
            let written = state.plan.segment(at: start)?.written ?? 0
            var writeback: Range<Int>?
            let from = state.writeback[start] ?? 0
            if written - from >= PartFile.writebackChunk {
                writeback = (start + from)..<(start + written)
                state.writeback[start] = written
            }
            let unrecorded = written - (state.recorded[start] ?? 0)
            let budget = context.configuration.durability.checkpointBytes - context.configuration.receiveBufferSize
            let due = unrecorded > max(0, budget) || now - state.lastCheckpoint >= context.configuration.durability.checkpointInterval
            var report: (Int, Double, Int)?
            if now - state.lastProgress >= .milliseconds(100) {
                state.lastProgress = now
                state.meter.record(bytes: state.plan.completedBytes, at: now)
                report = (state.plan.completedBytes, state.meter.bytesPerSecond, state.connections)
            }
            return (due, report, writeback)
        }
        if let writeback { context.part.startWriteback(offset: writeback.lowerBound, length: writeback.count) }
        if due { try checkpoint(force: false, now: now) }
        if let report { context.progress(report.0, report.1, report.2) }
    }

    /// Records every segment's progress in the store, and starts a background flush when one is due.
    func checkpoint(force: Bool, now: ContinuousClock.Instant = .now) throws {
        if let failure = context.part.syncFailure {
            throw SwoopError.fileSystem("flush", path: context.part.path, errno: failure)
        }
        let (segments, speed, flushWanted) = state.withLockedValue { state -> ([Segment], Double, [Int: Int]?) in
            state.lastCheckpoint = now
            for segment in state.plan.segments { state.recorded[segment.start] = segment.written }
            var flush: [Int: Int]?
            if force || now - state.lastSync >= context.configuration.durability.syncInterval {
                state.lastSync = now
                flush = Dictionary(uniqueKeysWithValues: state.plan.segments.map { ($0.start, $0.written) })
            }
            return (state.plan.segments, state.meter.bytesPerSecond, flush)
        }
        if let flushWanted {
            let box = state
            context.part.syncInBackground { box.withLockedValue { $0.plan.recordSynced(flushWanted) } }
        }
        try withStoreErrors {
            try context.store.checkpoint(id: context.recordID, segments: segments, bootID: context.bootID, bytesPerSecond: speed)
        }
    }

    /// After a failed flush only flushed bytes count: every segment goes back to what was flushed.
    func distrustUnflushed() {
        state.withLockedValue { state in
            state.plan = state.plan.trusted(sameBoot: false)
        }
    }
}
