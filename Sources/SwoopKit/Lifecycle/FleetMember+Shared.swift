import Foundation

// A fleet writing into one shared directory (``FleetMember/Settings/sharedDirectory``): a large
// file is split into parts that any node claims, each written into the shared part file at its
// offsets and flushed by its holder; the node that claimed the download watches its parts and
// finishes the file once every part is flushed. A part taken over from a node that died continues
// from what that node had flushed (and reported with its heartbeat).
extension FleetMember {
    /// A part this node fetches: its claim, its transfer, and what its end is when it was stopped
    /// here (`nil` while it runs, or when its claim was lost: nothing to write then).
    struct PartRun {
        var claim: Claim
        var transfer: SharedPartTransfer
        var task: Task<Void, Never>
        var stoppedAs: ClaimOutcome?
    }

    /// A download claimed in shared mode: split (or found split) and watched, else run here whole.
    ///
    /// One this node never ran that ran elsewhere before (`takenOver`) is fetched as parts however
    /// small: its part file, left in the shared directory by the node that ran it, is then reused
    /// (from its first byte: that node's journal is its own) instead of left beside a `NAME.1`.
    func adopt(_ claim: Claim, _ request: DownloadRequest, takenOver: Bool) async -> Bool {
        guard let directory = settings.sharedDirectory else { return false }
        do {
            let parts = try await catalogue.parts(of: claim.id)
            if !parts.isEmpty, parts.allSatisfy({ $0.state != .failed && $0.state != .removed }) {
                // Split by a node that stopped or died: its parts go on where they are.
                supervised[claim.id] = claim
                return true
            }
            let configuration = request.settings.applied(to: manager.configuration)
            guard let probe = try await SharedFile.probe(request, configuration: configuration, client: manager.client, logger: logger),
                probe.length >= 2 * settings.partSize || (takenOver && probe.length > 0)
            else { return false }
            let partSize = settings.partSize
            // This download's own part file, when it has one: an earlier split's, or that of the node that ran it whole.
            let own = parts.first?.part?.fileName ?? (takenOver ? claim.entry.fileName : nil)
            let ranges = try await DiskWork.run { try SharedFile.prepare(probe, in: directory, partSize: partSize, own: own) }
            let items = ranges.map { part in
                CatalogueItem(
                    urls: claim.entry.urls, options: claim.entry.options, priority: CatalogueRules.partPriority, parent: claim.id, part: part
                )
            }
            if try await catalogue.split(claim, into: items) {
                logger.info("split download \(claim.id) into \(items.count) parts for the fleet", metadata: ["file": "\(ranges[0].path)"])
                supervised[claim.id] = claim
            }
            return true
        } catch {
            // Not split (the server could not be asked, say): this node runs it whole, and says why it fails.
            logger.debug("not splitting \(claim.id): \(error)")
            return false
        }
    }

    /// Starts fetching a claimed part.
    func startPart(_ claim: Claim) {
        guard let part = claim.entry.part else { return }
        let request: DownloadRequest
        do {
            request = try makeRequest(claim.entry)
        } catch {
            ends.append(ClaimEnd(claim, .failed((error as? SwoopError)?.message ?? "\(error)")))
            return
        }
        let transfer = SharedPartTransfer(
            part: part, flushed: claim.entry.completedBytes, flushEvery: settings.partFlushBytes, request: request, configuration: request.settings.applied(to: manager.configuration),
            client: manager.client, logger: logger
        )
        let id = claim.id
        let task = Task {
            let outcome: ClaimOutcome
            do {
                try await transfer.run()
                outcome = .completed(fileName: part.fileName, totalBytes: part.count)
            } catch {
                outcome = .failed("bytes \(part.start)-\(part.end) of \(part.fileName): \((error as? SwoopError)?.message ?? "\(error)")")
            }
            await self.partEnded(id, outcome)
        }
        parts[id] = PartRun(claim: claim, transfer: transfer, task: task, stoppedAs: nil)
    }

    /// A part's transfer ended: its claim ends with it (or as it was stopped here).
    func partEnded(_ id: Download.ID, _ outcome: ClaimOutcome) {
        guard let run = parts.removeValue(forKey: id) else { return }
        if run.task.isCancelled {
            guard let stopped = run.stoppedAs else { return }
            ends.append(ClaimEnd(run.claim, stopped))
        } else {
            ends.append(ClaimEnd(run.claim, outcome))
        }
        kick.yield()
    }

    /// Stops a part here: its claim ends as `outcome` (`nil`: lost, nothing written).
    func stopPart(_ id: Download.ID, as outcome: ClaimOutcome?) {
        guard var run = parts[id] else { return }
        run.stoppedAs = outcome
        parts[id] = run
        run.task.cancel()
    }

    /// Stops every part this node fetches (given back) and waits for their last flushes.
    func stopAllParts() async {
        let running = parts
        for id in running.keys { stopPart(id, as: .released) }
        for run in running.values { await run.task.value }
    }

    /// The progress of the parts fetched here, for the heartbeat.
    var partProgress: [ClaimProgress] {
        parts.values.map { run in
            ClaimProgress(
                id: run.claim.id, epoch: run.claim.epoch, totalBytes: run.claim.entry.part?.count, completedBytes: run.transfer.flushed,
                bytesPerSecond: run.transfer.bytesPerSecond
            )
        }
    }

    /// Looks at each watched download's parts: its progress for the heartbeat; finished once every
    /// part is complete; failed when one failed.
    func watchSplits() async -> [ClaimProgress] {
        var progress: [ClaimProgress] = []
        let ended = ends.count
        defer { if ends.count > ended { kick.yield() } }
        for (id, claim) in supervised {
            guard let parts = try? await catalogue.parts(of: id), let first = parts.first?.part else { continue }
            if let failed = parts.first(where: { $0.state == .failed || $0.state == .removed }) {
                supervised[id] = nil
                ends.append(ClaimEnd(claim, .failed(failed.error ?? "a part of the file was removed")))
                continue
            }
            if parts.allSatisfy({ $0.state == .completed }) {
                supervised[id] = nil
                let checksum = (try? makeRequest(claim.entry))?.checksum
                do {
                    try await DiskWork.run { try SharedFile.finish(first, checksum: checksum) }
                    logger.info("download \(id) complete: \(first.fileName), from \(parts.count) parts")
                    ends.append(ClaimEnd(claim, .completed(fileName: first.fileName, totalBytes: first.length)))
                } catch {
                    ends.append(ClaimEnd(claim, .failed((error as? SwoopError)?.message ?? "\(error)")))
                }
                continue
            }
            let done = parts.reduce(0) { $0 + ($1.state == .completed ? ($1.part?.count ?? 0) : $1.completedBytes) }
            let speed = parts.reduce(0) { $0 + ($1.state == .active ? $1.bytesPerSecond : 0) }
            progress.append(
                ClaimProgress(id: id, epoch: claim.epoch, totalBytes: first.length, completedBytes: done, bytesPerSecond: speed, fileName: first.fileName)
            )
        }
        return progress
    }
}
