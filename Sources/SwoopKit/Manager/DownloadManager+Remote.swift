import Foundation

// Controlling a download that another process transfers: the request goes through the store (a
// `DownloadControl`), the process holding the download's lock carries it out and clears it, and
// the caller waits for that. Both sides are here: asking (`withLockOrOwner`) and watching
// (`watchControls`, a child task of `run()`).

extension DownloadManager {
    /// How often a running manager looks for controls, and a caller for the answer.
    static let controlPollInterval: Duration = .milliseconds(200)

    /// Runs `body` on the download's record under its lock (see `withDownloadLock`); when another
    /// process holds the lock, asks that process to carry out `control` instead and waits for it.
    ///
    /// - Returns: The record `body` changed, or `nil` when the other process carried it out.
    /// - Throws: ``SwoopError/Code/inUse`` when that process does not answer within
    ///   ``Configuration/Durability/controlTimeout`` (a Swoop too old to watch, or one stuck).
    func withLockOrOwner(
        _ id: Download.ID, asking control: DownloadControl, _ body: (inout DownloadRecord) throws -> Void
    ) async throws -> DownloadRecord? {
        // Twice at most: the holder may let go of the download between the two tries.
        for attempt in 1...2 {
            do {
                return try withDownloadLock(id, body)
            } catch let busy as SwoopError where busy.code == .inUse {
                if try await askOwner(id, control, busy: busy) { return nil }
                if attempt == 2 { throw busy }
            }
        }
        return nil
    }

    /// Leaves `control` for the process holding `id`'s lock and waits until it has carried it out
    /// (`true`) or let go of the lock without taking it (`false`: the caller does it itself).
    private func askOwner(_ id: Download.ID, _ control: DownloadControl, busy: SwoopError) async throws -> Bool {
        try store.post(control, id: id)
        // Whatever happens, no control is left behind for a later run of the download.
        defer { try? store.clearControl(id: id) }
        let timeout = configuration.durability.controlTimeout
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: Self.controlPollInterval / 4)
            if try store.controls()[id] == nil { return true }
            guard let record = try store.record(id: id) else { return true }
            if let free = try? DownloadLock.acquireIfFree(record.key, in: configuration.lockDirectory) {
                free.release()
                // The holder let go: it carried the control out (it clears it just after), or its
                // download ended first. What the record says tells which.
                return try store.controls()[id] == nil || Self.isCarriedOut(control, by: store.record(id: id))
            }
        }
        throw SwoopError(.inUse, "\(busy.message) and it did not answer within \(ByteFormatting.delay(timeout.seconds)) (is it an older swoop?)")
    }

    /// Whether a download whose record reads `record` (`nil`: gone) needs nothing more for `control`.
    static func isCarriedOut(_ control: DownloadControl, by record: DownloadRecord?) -> Bool {
        switch control {
        case .pause: return record?.state == .paused
        case .cancel: return record == nil || record?.state == .removed
        case .remove: return record == nil
        // Stored before it was asked for: a download that runs nowhere starts with it.
        case .applySettings: return true
        }
    }

    /// Watches the store for controls other processes leave for this manager's running downloads,
    /// and carries them out; ends when its task is cancelled. A child task of ``run()``.
    nonisolated func watchControls() async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: Self.controlPollInterval)
            } catch {
                return
            }
            guard runs.hasTransfers, let controls = try? store.controls(), !controls.isEmpty else { continue }
            for (id, control) in controls where runs.isTransferring(id) {
                await carryOut(control, for: id)
            }
        }
    }

    /// Carries out a control another process left for a download this manager transfers, then
    /// clears it (which tells the asker it is done).
    func carryOut(_ control: DownloadControl, for id: Download.ID) async {
        switch control {
        case .pause:
            try? await pause(id)
        case .cancel:
            try? await cancel(id)
        case .remove(let deletingFile):
            try? await remove(id, deletingFile: deletingFile)
        case .applySettings:
            if let record = try? store.record(id: id) { try? rateLimits.set(id, own: record.settings.ownRate) }
        }
        try? store.clearControl(id: id)
    }
}
