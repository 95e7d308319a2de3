import Foundation

// A fleet writing into one shared directory (``FleetMember/Settings/sharedDirectory``): a large
// file is split into parts that any node claims, each written into the shared part file at its
// offsets and flushed by its holder; the node that claimed the download watches its parts and
// finishes the file once every part is flushed. A part taken over from a node that died continues
// from what that node had flushed (and reported with its heartbeat).
//
// What takes long (a probe, making the part file, a finish that reads the file for its checksum)
// runs in tasks of its own, never in the sync that renews the leases: its claim waits in
// `pending` or `finishing`, renewed meanwhile, and its result is applied only if the claim is
// still held then (the actor may have lost it, or stopped, while the task ran).
extension FleetMember {
    /// A part this node fetches: its claim, its transfer, and what its end is when it was stopped
    /// here (`nil` while it runs, or when its claim was lost: nothing to write then).
    struct PartRun {
        var claim: Claim
        var transfer: SharedPartTransfer
        var task: Task<Void, Never>
        var stoppedAs: ClaimOutcome?
    }

    /// What becomes of a download claimed in shared mode.
    enum Adoption: Sendable {
        /// Split already (by a node that stopped or died): watched here.
        case watch
        /// Split now into these parts (`made`: a part file this node created, removed again when
        /// the split is refused).
        case split([CatalogueItem], made: String?)
        /// Too small, or not splittable: run here whole.
        case whole
    }

    /// Decides, in a task of its own, what becomes of a download claimed in shared mode.
    ///
    /// One this node never ran that ran elsewhere before (`takenOver`) is fetched as parts however
    /// small: the part file the node that ran it left in the shared directory is then reused (from
    /// its first byte: that node's journal is its own) instead of left beside a `NAME.1`. A split
    /// made again (a part failed, or the download was removed) writes a part file of its own, so
    /// that no holder of an old part can write into the new one.
    func adopt(_ claim: Claim, _ request: DownloadRequest, takenOver: Bool) {
        pending[claim.id] = claim
        let (catalogue, client, logger) = (catalogue, manager.client, logger)
        let (directory, partSize) = (settings.sharedDirectory ?? request.directory, settings.partSize)
        let configuration = request.settings.applied(to: manager.configuration)
        // A download held to a rate runs whole on one node, whose manager holds it there (parts on
        // several nodes would each take the whole rate).
        let limited = request.bytesPerSecond != nil || configuration.limits.perDownloadBytesPerSecond != nil
        let task = Task {
            let adoption: Adoption
            do {
                let parts = try await catalogue.parts(of: claim.id)
                if !parts.isEmpty, parts.allSatisfy({ $0.state != .failed && $0.state != .removed }) {
                    adoption = .watch
                } else if !limited, let probe = try await SharedFile.probe(request, configuration: configuration, client: client, logger: logger),
                    probe.length >= 2 * partSize || (takenOver && probe.length > 0)
                {
                    let old = parts.first?.part
                    let own = old?.fileName ?? (takenOver ? claim.entry.fileName : nil)
                    let generation = old == nil ? nil : claim.epoch
                    let (ranges, made) = try await DiskWork.run {
                        if let old { _ = unlink(old.path) }
                        return try SharedFile.prepare(probe, in: directory, partSize: partSize, own: own, generation: generation)
                    }
                    adoption = .split(
                        ranges.map { part in
                            CatalogueItem(
                                urls: claim.entry.urls, options: claim.entry.options, priority: CatalogueRules.partPriority, parent: claim.id,
                                part: part
                            )
                        },
                        made: made
                    )
                } else {
                    adoption = .whole
                }
            } catch {
                // Not split (the server could not be asked, say): this node runs it whole, and says why it fails.
                logger.debug("not splitting", metadata: ["download.id": "\(claim.id)", "error": "\(error)"])
                adoption = .whole
            }
            await self.adopted(claim, request, adoption)
        }
        tasks[claim.id] = task
    }

    /// Applies what ``adopt(_:_:takenOver:)`` decided, if the claim is still pending here.
    func adopted(_ claim: Claim, _ request: DownloadRequest, _ adoption: Adoption) async {
        tasks[claim.id] = nil
        guard pending[claim.id] == claim else {
            if case .split(_, let made?) = adoption { _ = unlink(made) }
            return
        }
        switch adoption {
        case .watch:
            pending[claim.id] = nil
            supervised[claim.id] = claim
        case .whole:
            pending[claim.id] = nil
            await runHere(claim, request)
        case .split(let items, let made):
            let split: Bool
            do {
                split = try await catalogue.split(claim, into: items)
            } catch {
                logger.warning("cannot split download \(claim.id): \(error)")
                split = false
            }
            // Lost meanwhile (here or in the catalogue): another node has it now.
            guard split, pending[claim.id] == claim else {
                if !split, let made { _ = unlink(made) }
                return
            }
            pending[claim.id] = nil
            supervised[claim.id] = claim
            logger.info("split download \(claim.id) into \(items.count) parts for the fleet")
        }
        kick.yield()
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
            part: part, flushed: claim.entry.completedBytes, flushEvery: settings.partFlushBytes, request: request,
            configuration: request.settings.applied(to: manager.configuration), client: manager.client, logger: logger
        )
        let id = claim.id
        // Unstructured: a part runs across syncs; it is cancelled and awaited by `stopAllParts`.
        let task = Task {
            let outcome: ClaimOutcome
            do {
                try await transfer.run()
                outcome = .completed(fileName: part.fileName, totalBytes: part.count)
            } catch {
                outcome = .failed("bytes \(part.start)-\(part.end) of \(part.fileName): \((error as? SwoopError)?.message ?? "\(error)")")
            }
            self.partEnded(id, outcome)
        }
        parts[id] = PartRun(claim: claim, transfer: transfer, task: task, stoppedAs: nil)
    }

    /// A part's transfer ended: its claim ends with it (a part that completed as it was stopped is
    /// complete), or as it was stopped here.
    func partEnded(_ id: Download.ID, _ outcome: ClaimOutcome) {
        guard let run = parts.removeValue(forKey: id) else { return }
        if case .completed = outcome {
            ends.append(ClaimEnd(run.claim, outcome))
        } else if run.task.isCancelled {
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

    /// Stops every part this node fetches and every split decision or finish under way (given
    /// back), and waits for them (a part's last flush).
    func stopAllParts() async {
        let running = parts
        for id in running.keys { stopPart(id, as: .released) }
        for run in running.values { await run.task.value }
        for task in tasks.values { await task.value }
    }

    /// Gives back the split downloads this node decides on, watches or finishes.
    func releaseSplits() {
        ends += (Array(pending.values) + Array(supervised.values) + Array(finishing.values)).map { ClaimEnd($0, .released) }
        pending = [:]
        supervised = [:]
        finishing = [:]
    }

    /// The heartbeat's progress of what this node does for split downloads: its parts, the
    /// downloads it decides on or finishes, and those it watches (each looked at: finished in a
    /// task of its own once every part is complete; failed, its other parts removed, when one failed).
    func splitProgress() async -> [ClaimProgress] {
        var progress = parts.values.map { run in
            ClaimProgress(
                id: run.claim.id, epoch: run.claim.epoch, totalBytes: run.claim.entry.part?.count, completedBytes: run.transfer.flushed,
                bytesPerSecond: run.transfer.bytesPerSecond
            )
        }
        for claim in pending.values {
            progress.append(ClaimProgress(id: claim.id, epoch: claim.epoch, totalBytes: claim.entry.totalBytes, completedBytes: claim.entry.completedBytes))
        }
        for claim in finishing.values {
            progress.append(ClaimProgress(id: claim.id, epoch: claim.epoch, totalBytes: claim.entry.totalBytes, completedBytes: claim.entry.totalBytes ?? 0))
        }
        let ended = ends.count
        for (id, claim) in supervised {
            guard let parts = try? await catalogue.parts(of: id) else { continue }
            // Looked at across an await: it may have been given back or lost meanwhile.
            guard supervised[id] == claim else { continue }
            guard let first = parts.first?.part else {
                supervised[id] = nil
                ends.append(ClaimEnd(claim, .released))
                continue
            }
            if let failed = parts.first(where: { $0.state == .failed || $0.state == .removed }) {
                supervised[id] = nil
                let others = parts.filter { $0.state == .waiting || $0.state == .active || $0.state == .paused }.map(\.id)
                _ = try? await catalogue.control(.remove, ids: others)
                ends.append(ClaimEnd(claim, .failed(failed.error ?? "a part of the file was removed")))
                continue
            }
            if parts.allSatisfy({ $0.state == .completed }) {
                supervised[id] = nil
                var finished = claim
                finished.entry.totalBytes = first.length
                finishing[id] = finished
                finish(finished, first, parts: parts.count)
                continue
            }
            let done = parts.reduce(0) { $0 + ($1.state == .completed ? ($1.part?.count ?? 0) : $1.completedBytes) }
            let speed = parts.reduce(0) { $0 + ($1.state == .active ? $1.bytesPerSecond : 0) }
            progress.append(
                ClaimProgress(
                    id: id, epoch: claim.epoch, totalBytes: first.length, completedBytes: done, bytesPerSecond: speed, fileName: first.fileName,
                    directory: (first.path as NSString).deletingLastPathComponent
                )
            )
        }
        if ends.count > ended { kick.yield() }
        return progress
    }

    /// Finishes a split file in a task of its own (its checksum read, its flush), then ends its claim.
    func finish(_ claim: Claim, _ part: CataloguePart, parts count: Int) {
        let checksum = (try? makeRequest(claim.entry))?.checksum
        let task = Task {
            let outcome: ClaimOutcome
            do {
                try await DiskWork.run { try SharedFile.finish(part, checksum: checksum) }
                outcome = .completed(fileName: part.fileName, totalBytes: part.length)
            } catch {
                outcome = .failed((error as? SwoopError)?.message ?? "\(error)")
            }
            self.finished(claim, outcome, parts: count)
        }
        tasks[claim.id] = task
    }

    func finished(_ claim: Claim, _ outcome: ClaimOutcome, parts count: Int) {
        tasks[claim.id] = nil
        guard finishing[claim.id] == claim else { return }
        finishing[claim.id] = nil
        if case .completed(let name, _) = outcome { logger.info("download \(claim.id) complete: \(name), from \(count) parts") }
        ends.append(ClaimEnd(claim, outcome, directory: settings.sharedDirectory))
        kick.yield()
    }
}
