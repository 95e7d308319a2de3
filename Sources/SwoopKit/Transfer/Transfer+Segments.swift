import AsyncHTTPClient
import Foundation
import NIOCore

// A fresh download split over several connections (``SegmentedTransfer``).

extension Transfer {
    /// The split of a fresh download over several connections, when it applies: more than one
    /// connection allowed, a `206` to the probe (ranges work), a known length of at least two
    /// minimum segments, and a validator that every segment's answer can be checked against.
    /// Otherwise `nil`: one connection, silently.
    func splitPlan(start: Int, total: Int?, status: Int) -> SegmentPlan? {
        let settings = configuration.segments
        guard settings.maxConnections > 1, start == 0, status == 206, let total, total >= 2 * settings.minSplitSize,
            record.etag.map({ !$0.hasPrefix("W/") }) == true || record.lastModified != nil
        else { return nil }
        let plan = SegmentPlan.initial(total: total, connections: settings.maxConnections, minSplitSize: settings.minSplitSize)
        return plan.segments.count > 1 ? plan : nil
    }

    /// Runs the segments to the end. A representation change restarts the download from zero (and
    /// returns `false` to go again); anything else ends as the connections' error.
    func runSegments(_ plan: SegmentPlan, first: HTTPClientResponse.Body?) async throws -> Bool {
        guard let part else { throw SwoopError(.fileSystem, "no part file open for \(record.url)") }
        let emit = self.emit
        let base = snapshot()
        let engine = SegmentedTransfer(
            plan: plan,
            context: .init(
                client: context.client, configuration: configuration, logger: context.logger, url: url,
                headers: configuration.headers + options.headers, part: part, store: store, recordID: record.id,
                bootID: recordedBootID,
                saved: SavedRepresentation(offset: 0, totalBytes: plan.total, etag: record.etag, lastModified: record.lastModified),
                throttle: throttle,
                progress: { done, speed, connections in
                    var download = base
                    download.completedBytes = done
                    download.bytesPerSecond = speed
                    download.connections = connections
                    emit(.progress(download))
                }
            )
        )
        segmented = engine
        do {
            try await engine.run(connections: configuration.segments.maxConnections, first: first)
        } catch let change as SegmentRestart {
            try await onDisk { try $0.restart(because: change.reason) }
            return false
        } catch {
            record.segments = engine.plan.segments
            throw error
        }
        offset = plan.total
        record.segments = engine.plan.segments
        segmented = nil
        return true
    }
}
