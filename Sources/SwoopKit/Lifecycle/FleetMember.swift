import Foundation
import Logging
import ServiceLifecycle

/// One daemon's part in a fleet: claims downloads from the shared ``DownloadCatalogue`` while its
/// manager has room, runs them in its ``DownloadManager`` (which keeps the local journal: part
/// files, written and flushed bytes), renews their leases with a heartbeat that carries their
/// progress, does what was asked of them (a pause or a remove made by any daemon), and ends each
/// claim with the download's outcome. A `Service`: run it beside the manager's ``DownloadService``.
///
/// **Never two writers.** A claim this node lost (taken over after its lease ran out: the heartbeat
/// says so) is paused here at once and forgotten; and when no heartbeat got through for longer than
/// the lease less one heartbeat (the catalogue unreachable), every claimed download is paused here,
/// since another node may now hold them (and given back when the catalogue answers again). What
/// could not be written to the catalogue (a claim's end) is written again at each heartbeat until it
/// is, or until the catalogue refuses it.
public actor FleetMember: Service {
    public struct Settings: Sendable {
        /// This node's name, unique in the fleet.
        public var node: String
        /// Where its RPC listens, shown by `swoop nodes`.
        public var address: String
        /// At most this many downloads claimed by this node at once.
        public var maxActive: Int
        /// The fleet's own limits, counted over every node.
        public var fleetMaxActive: Int?
        public var fleetMaxPerHost: Int?
        /// How long a claim lasts without a heartbeat, on the catalogue's clock.
        public var lease: Duration = .seconds(15)
        /// How often the heartbeat renews the leases (and claims, when nothing wakes this node sooner).
        public var heartbeat: Duration = .seconds(5)
        /// The download directory every node of the fleet shares (the same path on each), or `nil`
        /// when each writes into its own. Shared, a file of at least two ``partSize``s is split
        /// into parts that any node fetches (``FleetMember`` `+Shared`).
        public var sharedDirectory: String?
        /// The size of a split file's parts.
        public var partSize = 64 << 20
        /// This run of the daemon, among those that ever ran as ``node`` (``DownloadCatalogue/join(_:lease:)``).
        public var instance = UUID().uuidString
        /// How much of a part is written between flushes: at most this much (and what arrived since
        /// the last heartbeat) is fetched again when another node takes the part over.
        public var partFlushBytes = 8 << 20

        public init(node: String, address: String = "", maxActive: Int, fleetMaxActive: Int? = nil, fleetMaxPerHost: Int? = nil) {
            self.node = node
            self.address = address
            self.maxActive = maxActive
            self.fleetMaxActive = fleetMaxActive
            self.fleetMaxPerHost = fleetMaxPerHost
        }
    }

    /// The request a node makes of a claimed entry: its URLs and options, read against this node's
    /// download directory. A request it cannot make fails the download with its message.
    public typealias MakeRequest = @Sendable (CatalogueEntry) throws -> DownloadRequest

    let manager: DownloadManager
    let catalogue: any DownloadCatalogue
    let settings: Settings
    let makeRequest: MakeRequest
    let logger: Logger
    /// The claims this node holds, by the manager's id of their download.
    var held: [Download.ID: Claim] = [:]
    /// The parts of split downloads this node fetches, by their catalogue id.
    var parts: [Download.ID: PartRun] = [:]
    /// The split downloads this node claimed and watches until their parts are done.
    var supervised: [Download.ID: Claim] = [:]
    /// Downloads claimed in shared mode whose fate is being decided (a probe, a split) in a task.
    var pending: [Download.ID: Claim] = [:]
    /// Split downloads whose every part is done, being finished in a task.
    var finishing: [Download.ID: Claim] = [:]
    /// Those tasks, by download.
    var tasks: [Download.ID: Task<Void, Never>] = [:]
    /// Claims ended here and not yet written to the catalogue: written together at the next sync
    /// (kept, when the catalogue is unreachable, until it is back).
    var ends: [ClaimEnd] = []
    /// Whether the next sync renews the leases: the heartbeat's time came, or the catalogue
    /// changed (a control may have been asked of this node). A download that ended only ends.
    var renewDue = true
    /// Where this node's RPC listens, once it does (``announce(address:)``).
    var address: String
    var lastRenewal = ContinuousClock.now
    var lastBeat: ContinuousClock.Instant?
    /// Set when the service is asked to stop: no more claims.
    var stopping = false
    let (kicks, kick) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    public init(manager: DownloadManager, catalogue: any DownloadCatalogue, settings: Settings, logger: Logger, makeRequest: @escaping MakeRequest) {
        self.manager = manager
        self.catalogue = catalogue
        self.settings = settings
        self.logger = logger
        self.makeRequest = makeRequest
        self.address = settings.address
    }

    /// Says where this node's RPC listens (known once it is bound), in a heartbeat at once.
    public func announce(address: String) {
        self.address = address
        lastBeat = nil
        kick.yield()
    }

    /// The catalogue ids of the downloads this node runs now.
    public var claimed: Set<Download.ID> {
        Set(held.values.map(\.id)).union(parts.keys).union(supervised.keys).union(pending.keys).union(finishing.keys)
    }

    /// Claims, runs and renews until a graceful shutdown (or cancellation), then gives back every
    /// claim it still holds, for other nodes to take at once.
    public func run() async throws {
        let events = manager.events { $0.isTerminal }
        let changes = catalogue.changes()
        let (kick, heartbeat) = (self.kick, settings.heartbeat)
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await event in events { await self.ended(event) } }
                group.addTask {
                    for await _ in changes {
                        await self.markRenewDue()
                        kick.yield()
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        // Checked here too: a sync can wait on an unreachable catalogue for a while.
                        await self.stopWritingIfLeaseRanOut()
                        await self.markRenewDue()
                        kick.yield()
                        try? await Task.sleep(for: heartbeat)
                    }
                }
                // Until the kicks end: a graceful shutdown finishes them; a cancellation ends the loop.
                for await _ in kicks { await sync() }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            Task { await self.stop() }
            kick.finish()
        }
        // Given back even when this task was cancelled: other nodes take them at once, not after the lease.
        await Task { await self.giveBack() }.value
    }

    // MARK: - The heartbeat

    func markRenewDue() { renewDue = true }

    func stop() { stopping = true }

    /// When no renewal got through for the lease less one heartbeat, another node may hold these
    /// downloads now (or soon): they are paused here at once and forgotten.
    func stopWritingIfLeaseRanOut() async {
        guard !claimed.isEmpty, ContinuousClock.now - lastRenewal >= settings.lease - settings.heartbeat else { return }
        logger.warning("no heartbeat reached the catalogue for the lease's length; stopping this node's \(claimed.count) downloads and parts here")
        await stopEverything()
    }

    /// Pauses every download and part this node runs, and gives their claims back (once the
    /// catalogue answers, to run at once: here, from the part file, or elsewhere; a renewal still
    /// on its way would otherwise hold them for another lease). Refused, harmlessly, for a claim
    /// another node took over meanwhile.
    func stopEverything() async {
        for id in parts.keys {
            logger.warning("stopping part \(id) here")
            stopPart(id, as: .released)
        }
        releaseSplits()
        let lost = held
        held = [:]
        for (local, claim) in lost {
            logger.warning("stopping download \(claim.id) here")
            try? await manager.pause(local)
            ends.append(ClaimEnd(claim, .released))
        }
    }

    /// Ends the claims whose downloads ended (in one write), renews the held leases when due (doing
    /// what was asked of them), beats, and claims what there is room for.
    func sync() async {
        await settleEnded()
        if renewDue || ContinuousClock.now - lastRenewal >= settings.heartbeat {
            renewDue = false
            await renew()
        }
        await beatIfDue()
        await claimMore()
    }

    func renew() async {
        let now = ContinuousClock.now
        var progress = await splitProgress()
        guard !held.isEmpty || !progress.isEmpty else {
            lastRenewal = now
            return
        }
        var paused: Set<Download.ID> = []
        for (local, claim) in held {
            let download = try? await manager.download(id: local)
            if download?.state == .paused { paused.insert(local) }
            progress.append(
                ClaimProgress(
                    id: claim.id, epoch: claim.epoch, totalBytes: download?.totalBytes, completedBytes: download?.completedBytes ?? 0,
                    bytesPerSecond: download?.bytesPerSecond ?? 0, fileName: download?.destination.map { ($0 as NSString).lastPathComponent },
                    directory: Self.directory(of: download)
                )
            )
        }
        do {
            let renewal = try await catalogue.renew(node: settings.node, lease: settings.lease, progress: progress)
            lastRenewal = now
            for (local, claim) in held where renewal.lost.contains(claim.id) {
                logger.warning("another node took over download \(claim.id) after its lease ran out; stopping it here")
                held[local] = nil
                try? await manager.pause(local)
            }
            // Paused here, and its pause event read while it looked like a change of its sources
            // (one that then failed): ended now.
            for local in paused where held[local] != nil {
                guard await manager.staysPaused(local), let claim = held[local] else { continue }
                held[local] = nil
                ends.append(ClaimEnd(claim, .paused))
            }
            for (local, claim) in held {
                switch renewal.requested[claim.id] {
                case .pause: try? await manager.pause(local)
                case .remove: try? await manager.cancel(local)
                case .resume, nil: break
                }
            }
            for id in parts.keys {
                if renewal.lost.contains(id) {
                    logger.warning("another node took over part \(id) after its lease ran out; stopping it here")
                    stopPart(id, as: nil)
                }
                switch renewal.requested[id] {
                case .pause: stopPart(id, as: .paused)
                case .remove: stopPart(id, as: .removed)
                case .resume, nil: break
                }
            }
            // Split downloads decided on, watched or finished here: their parts were asked too; the
            // download ends here as asked (a task still deciding or finishing it finds it gone).
            for id in Set(supervised.keys).union(pending.keys).union(finishing.keys) {
                guard let claim = supervised[id] ?? pending[id] ?? finishing[id] else { continue }
                let control = renewal.requested[id]
                guard renewal.lost.contains(id) || control == .pause || control == .remove else { continue }
                (supervised[id], pending[id], finishing[id]) = (nil, nil, nil)
                if !renewal.lost.contains(id) { ends.append(ClaimEnd(claim, control == .pause ? .paused : .removed)) }
            }
        } catch {
            logger.warning("cannot renew this node's claims: \(error)")
            // The lease may have run out on the catalogue's clock: another node may take these now.
            await stopWritingIfLeaseRanOut()
        }
    }

    func beatIfDue() async {
        let now = ContinuousClock.now
        // Due a little early: the heartbeat's tick comes every `heartbeat`, give or take the time a
        // sync takes, and a beat skipped for a few milliseconds would wait a whole tick more.
        if let lastBeat, now - lastBeat < settings.heartbeat * 0.8 { return }
        var speed = 0.0
        for local in held.keys { speed += (try? await manager.download(id: local).bytesPerSecond) ?? 0 }
        for run in parts.values { speed += run.transfer.bytesPerSecond }
        let sent = address
        do {
            let recorded = try await catalogue.beat(
                NodeBeat(
                    name: settings.node, address: sent, activeDownloads: held.count + parts.count, bytesPerSecond: speed,
                    sharedDirectory: settings.sharedDirectory ?? "", instance: settings.instance
                )
            )
            if !recorded, !stopping {
                // Silent for a lease (stopped, say), and another daemon joined as this node since:
                // this one stops what it runs, gives it back, and claims no more.
                logger.error("another daemon joined the fleet as node \(settings.node) while this one was silent; this one stops its downloads and claims no more")
                stopping = true
                await stopEverything()
            }
            // An address announced while this beat was on its way goes in the next one, at once.
            if address == sent { lastBeat = now }
        } catch {
            logger.warning("cannot record this node's heartbeat: \(error)")
        }
    }

    func claimMore() async {
        let room = settings.maxActive - held.count - parts.count
        // Only while the manager runs: not before it reconciled, not once it is shutting down
        // (a claim it could not add would fail a download the fleet should simply run elsewhere).
        guard room > 0, !stopping, await manager.isRunning else { return }
        let request = ClaimRequest(
            node: settings.node, count: room, lease: settings.lease, maxActive: settings.fleetMaxActive, maxPerHost: settings.fleetMaxPerHost,
            takesParts: settings.sharedDirectory != nil
        )
        let claims: [Claim]
        do {
            let asked = ContinuousClock.now
            claims = try await catalogue.claim(request)
            let took = ContinuousClock.now - asked
            logger.debug("claim", metadata: ["asked": "\(room)", "claimed": "\(claims.count)", "ms": "\(String(format: "%.3f", took.seconds * 1000))"])
        } catch {
            logger.warning("cannot claim downloads: \(error)")
            return
        }
        for claim in claims {
            if claim.entry.part != nil {
                startPart(claim)
                continue
            }
            var request: DownloadRequest
            do {
                request = try makeRequest(claim.entry)
                // Run under the catalogue's id (its GID the same on every daemon), unless this node
                // already has a download of that id (one it ran under another directory, say).
                let newHere = (try? await manager.download(id: claim.id)) == nil
                if newHere { request.id = claim.id }
                if claim.epoch > 1 {
                    logger.info("claimed download \(claim.id), which ran before (claim \(claim.epoch))", metadata: ["download.url": "\(request.url)"])
                }
                // Shared mode: a large file is split across the fleet (or its parts found), and watched here.
                if settings.sharedDirectory != nil {
                    adopt(claim, request, takenOver: newHere && claim.epoch > 1)
                    continue
                }
            } catch {
                ends.append(ClaimEnd(claim, .failed((error as? SwoopError)?.message ?? "\(error)")))
                continue
            }
            await runHere(claim, request)
        }
    }

    /// Runs a claimed download in this node's manager.
    func runHere(_ claim: Claim, _ request: DownloadRequest) async {
        do {
            let local = try await manager.add(request)
            if let other = held[local], other.id != claim.id {
                ends.append(ClaimEnd(claim, .failed("the same file as download \(other.id), which this node runs")))
                return
            }
            // (The same download again: its lease ran out here unrenewed and this node claimed it
            // anew. The new epoch is the one to write with.)
            held[local] = claim
            // An end published while `add` ran (already complete, say) reached `ended` before this
            // claim was held: read it from the download itself.
            if let download = try? await manager.download(id: local), held[local] == claim,
                let outcome = Self.outcome(ofSettled: download)
            {
                held[local] = nil
                ends.append(ClaimEnd(claim, outcome, directory: Self.directory(of: download)))
            }
        } catch {
            // The manager stopped meanwhile: given back for another node, not failed.
            ends.append(ClaimEnd(claim, .released))
        }
    }
}
