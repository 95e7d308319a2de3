import AsyncHTTPClient
import Foundation
import NIOCore

// A download split over several connections (``SegmentedTransfer``): a fresh one after its probe,
// or one that a single connection had begun, when more connections are allowed now.

extension Transfer {
    /// The split over several connections of what is left from `start`, when it applies: more than
    /// one connection allowed, a `206` (ranges work: the probe's, or a resumed single connection's
    /// answer), a known length leaving at least two minimum segments, and a validator that every
    /// segment's answer can be checked against. The bytes before `start` (a single connection's, in
    /// front) are one finished segment. Otherwise `nil`: one connection, silently.
    func splitPlan(start: Int, total: Int?, status: Int) -> SegmentPlan? {
        let settings = configuration.segments
        guard settings.maxConnections > 1, status == 206, let total, total - start >= 2 * settings.minSplitSize,
            record.strongETag != nil || record.lastModified != nil
        else { return nil }
        let rest = SegmentPlan.initial(total: total - start, connections: settings.maxConnections, minSplitSize: settings.minSplitSize)
        guard rest.segments.count > 1 else { return nil }
        let done = start > 0 ? [Segment(start: 0, end: start, written: start, synced: min(record.syncedBytes, start))] : []
        return SegmentPlan(total: total, segments: done + rest.segments.map { Segment(start: $0.start + start, end: $0.end + start) })
    }

    /// Runs the segments to the end. A representation change restarts the download from zero (and
    /// returns `false` to go again); anything else ends as the connections' error.
    ///
    /// - Parameters:
    ///   - first: An open body for the segment at `firstAt`.
    ///   - recorded: The record's durable save, when it is still under way (``saveInBackground()``):
    ///     nothing is written before it is done, and this returns or throws only after it.
    ///   - early: The mirrors' pieces asked with the probe, each its mirror's first segment.
    func runSegments(
        _ plan: SegmentPlan, first: HTTPClientResponse.Body?, at firstAt: Int = 0, recorded: Task<Void, any Error>? = nil,
        early: EarlyRanges? = nil
    ) async throws -> Bool {
        guard let part else {
            try await recorded?.value
            throw SwoopError(.fileSystem, "no part file open for \(record.url)")
        }
        let emit = self.emit
        let base = snapshot()
        let engine = SegmentedTransfer(
            plan: plan,
            context: .init(
                client: context.client, configuration: configuration, logger: context.logger, url: url, mirrors: spareSources,
                mirrorProof: mirrorProof, urlProof: sourceProof,
                notice: { message in emit(.notice(base, message)) },
                headers: requestHeaders, part: part, store: store, recordID: record.id,
                bootID: recordedBootID,
                saved: SavedRepresentation(offset: 0, totalBytes: plan.total, etag: record.etag, lastModified: record.lastModified),
                throttle: throttle,
                progress: { done, speed, connections in
                    var download = base
                    download.completedBytes = done
                    download.bytesPerSecond = speed
                    download.connections = connections
                    emit(.progress(download))
                },
                recorded: recorded
            )
        )
        segmented = engine
        do {
            do {
                try await engine.run(connections: configuration.segments.maxConnections, first: first, firstAt: firstAt, early: early)
            } catch {
                // No save of this transfer's may overtake the one under way; a failed one, which
                // kept every byte out of the file, is the error.
                try await recorded?.value
                throw error
            }
            try await recorded?.value
        } catch let change as SegmentRestart {
            try await onDisk { try $0.restart(because: change.reason) }
            return false
        } catch {
            record.segments = engine.plan.segments
            throw error
        }
        offset = plan.total
        record.segments = engine.plan.segments
        // Every segment's answer showed the proof a moved-to URL owed.
        if url.absoluteString == record.url { record.movedFrom = nil }
        segmented = nil
        return true
    }
}
