import Foundation

// Controlling a download that another process transfers: the request goes through the store (a
// `PostedControl`), the process holding the download's lock carries it out and answers, and the
// caller waits for the answer. Both sides are here: asking (`withLockOrOwner`) and watching
// (`watchControls`, a child task of `run()`).

extension DownloadManager {
    /// How often a running manager looks for controls.
    static let controlPollInterval: Duration = .milliseconds(200)

    /// Runs `body` on the download's record under its lock (see `withDownloadLock`); when another
    /// process holds the lock, asks that process to carry out `control` instead and waits for it.
    ///
    /// - Returns: The record `body` changed, or `nil` when the other process carried it out.
    /// - Throws: What the other process answered when it could not; ``SwoopError/Code/inUse`` when
    ///   it does not answer within ``Configuration/Durability/controlTimeout`` (it is busy
    ///   finishing, or does not watch: an older swoop, or a direct download without `run()`);
    ///   ``SwoopError/Code/cancelled`` when the caller's task is cancelled while it waits (the
    ///   request is withdrawn).
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

    /// Posts `control` for the process holding `id`'s lock and waits until it has answered
    /// (`true`, or its error), or let go of the lock without answering (`true` when the record
    /// shows the request carried out, else `false`: the caller does it itself).
    private func askOwner(_ id: Download.ID, _ control: DownloadControl, busy: SwoopError) async throws -> Bool {
        let posted = PostedControl(id: id, control: control)
        try store.post(posted)
        // Whatever happens, the request does not outlive this call.
        defer { try? store.withdraw(posted.token) }
        let timeout = configuration.durability.controlTimeout
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            do {
                try await Task.sleep(for: Self.controlPollInterval / 4)
            } catch {
                throw SwoopError(.cancelled, "stopped waiting for an answer about download \(id.rawValue.prefix(8)); the request was withdrawn")
            }
            if let done = try answered(posted.token) { return done }
            guard let record = try store.record(id: id) else { return true }
            if let free = try? DownloadLock.acquireIfFree(record.key, in: configuration.lockDirectory) {
                free.release()
                // The holder let go: it carried the request out (and answers just after), or its
                // download ended first. Its answer, else what the record says, tells which.
                return try answered(posted.token) ?? Self.isCarriedOut(control, by: store.record(id: id))
            }
        }
        throw SwoopError(.inUse, "\(busy.message), which did not answer within \(ByteFormatting.delay(timeout.seconds))")
    }

    /// `true` once the control of `token` was carried out (or went with its download), `nil` while
    /// it waits; throws the answer of a holder that could not carry it out.
    private func answered(_ token: String) throws -> Bool? {
        guard let posted = try store.controls().first(where: { $0.token == token }) else { return true }
        switch posted.answer {
        case .done: return true
        case .failed(let code, let message): throw SwoopError(code, message)
        case nil: return nil
        }
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

    /// Watches the store for controls other processes leave for this manager's running downloads
    /// and carries them out, oldest first; ends when its task is cancelled. A child task of
    /// ``run()``. A control posted before the run went for its lock was meant for an earlier run
    /// and is left alone (its caller withdraws it).
    nonisolated func watchControls() async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: Self.controlPollInterval)
            } catch {
                return
            }
            guard runs.hasTransfers, let controls = try? store.controls() else { continue }
            for posted in controls where posted.answer == nil {
                guard let since = runs.transferringSince(posted.id), posted.postedAt >= since else { continue }
                try? store.answer(posted.token, await carryOut(posted.control, for: posted.id))
            }
        }
    }

    /// Carries out a control another process left for a download this manager transfers.
    ///
    /// - Returns: The answer: done, or why it could not be.
    func carryOut(_ control: DownloadControl, for id: Download.ID) async -> PostedControl.Answer {
        do {
            switch control {
            case .pause:
                try await pause(id)
            case .cancel:
                try await cancel(id)
            case .remove(let deletingFile):
                try await remove(id, deletingFile: deletingFile)
            case .applySettings:
                let record = try existingRecord(id)
                // Not running any more (it stopped meanwhile): it starts with the stored rate.
                guard try rateLimits.set(id, own: record.settings.ownRate) else { return .done }
                // Said where the download runs: its rate changed from elsewhere.
                let rate = rateLimits.runningRate(id).map { ByteFormatting.rate(Double($0)) } ?? "no limit"
                if let snapshot = runs.snapshot(id) {
                    hub.publish(.notice(snapshot, "rate limit of \(record.url) now \(rate) (changed by another swoop)"))
                }
            }
            return .done
        } catch {
            let failure = SwoopError.wrapping(error)
            return .failed(failure.code, failure.message)
        }
    }
}
