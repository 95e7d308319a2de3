import Foundation
import Logging

// How a fleet member's claims end: with their downloads' outcomes, written in batches at the next
// sync (kept while the catalogue is unreachable), and all given back when the daemon stops.
extension FleetMember {
    /// The directory a download's file is in, on this node, once it has a name.
    static func directory(of download: Download?) -> String? {
        download?.destination.map { ($0 as NSString).deletingLastPathComponent }
    }

    /// The outcome of a download already in a final state, or `nil` while it waits or runs.
    static func outcome(ofSettled download: Download) -> ClaimOutcome? {
        switch download.state {
        case .completed: return CatalogueRules.outcome(of: .completed(download))
        case .failed: return .failed(download.error ?? "failed")
        case .removed: return .removed
        case .paused: return .paused
        case .interrupted: return .released
        case .waiting, .active: return nil
        }
    }

    /// A download's terminal event: its claim ends with it, written at the next sync with the
    /// others that ended meanwhile.
    func ended(_ event: DownloadEvent) async {
        let local = event.download.id
        guard let claim = held[local], let outcome = CatalogueRules.outcome(of: event) else { return }
        // Paused only for a change of its sources (changeUri on this daemon), and running again: no end.
        if outcome == .paused, await !manager.staysPaused(local) { return }
        guard held[local] == claim else { return }
        held[local] = nil
        ends.append(ClaimEnd(claim, outcome, directory: Self.directory(of: event.download)))
        kick.yield()
    }

    /// Writes the ended claims in one batch; kept for the next sync when the catalogue is unreachable.
    func settleEnded() async {
        guard !ends.isEmpty else { return }
        let batch = ends
        ends = []
        do {
            let held = try await catalogue.settle(batch)
            for (end, wasHeld) in zip(batch, held) where !wasHeld {
                logger.warning("download \(end.claim.id) was taken over by another node before it ended here")
            }
        } catch {
            logger.warning("cannot end \(batch.count == 1 ? "a claim" : "\(batch.count) claims") (kept to write again): \(error)")
            ends = batch + ends
        }
    }

    /// Gives back every claim still held (the manager's shutdown interrupted their transfers), with
    /// what was left unwritten, and takes this node off the fleet's list.
    func giveBack() async {
        await stopAllParts()
        releaseSplits()
        ends += held.values.map { ClaimEnd($0, .released) }
        held = [:]
        await settleEnded()
        do {
            try await catalogue.leave(node: settings.node, instance: settings.instance)
        } catch {
            logger.warning("cannot take node \(settings.node) off the fleet's list: \(error)")
        }
    }
}
