import Foundation

/// What the daemons of a fleet share: the downloads, their order, who runs each and what was asked
/// of them. SwoopPostgres keeps it in PostgreSQL for daemons on many machines; SwoopStore's SQLite
/// catalogue for daemons on one. Both pass one contract (`Tests/SwoopFleetTests`).
///
/// What stays local to the node that runs a download (its part file, the journal of written and
/// flushed bytes per segment, the boot id) is its own ``DownloadStore``; the catalogue hears of
/// progress only through the heartbeat.
///
/// **Claims.** A node claims waiting downloads (``claim(_:)``), each with a lease on the catalogue's
/// clock, and renews the leases it holds with every heartbeat (``renew(node:lease:progress:)``).
/// A download whose lease ran out is claimable again, by any node, with a higher epoch. Every
/// write of a claim (``renew(node:lease:progress:)``, ``settle(_:as:)``) names the epoch it holds
/// and is refused when that epoch is no longer the download's: the node that lost it learns so on
/// its next write, and stops.
public protocol DownloadCatalogue: Sendable {
    /// Creates the schema, or migrates an older one; safe when several daemons start at once.
    func prepare() async throws

    /// Adds downloads, waiting (or paused) at the end of the queue, in the order given.
    func add(_ items: [CatalogueItem]) async throws

    /// The entries with these ids that exist, in the order given.
    func entries(ids: [Download.ID]) async throws -> [CatalogueEntry]

    /// A page of the entries in `states` (all states when `nil`), in queue order: priority (higher
    /// first), then the order they were added.
    func entries(in states: Set<Download.State>?, offset: Int, limit: Int) async throws -> [CatalogueEntry]

    /// A page of the downloads that stopped for good (completed, failed, removed), the first to stop
    /// first: aria2's tellStopped order.
    func stopped(offset: Int, limit: Int) async throws -> [CatalogueEntry]

    /// How many entries there are in each state (a state with none is left out).
    func counts() async throws -> [Download.State: Int]

    /// At most `limit` ids of downloads (not parts) that start with `prefix` (lower-case hex), in
    /// order: what a short id names.
    func ids(startingWith prefix: String, limit: Int) async throws -> [Download.ID]

    /// The parts of a split download, first byte first (none for one that is not split).
    func parts(of id: Download.ID) async throws -> [CatalogueEntry]

    /// Splits a claimed download into parts that any node may claim (a shared download directory):
    /// its earlier parts, if any, are replaced by `parts` (waiting, with ``CatalogueRules/partPriority``).
    /// Lists and counts leave parts out; a control asked of the download applies to its parts too
    /// (``CatalogueRules/cascades(_:toPartIn:)``). Returns `false`, writing nothing, when the claim
    /// is no longer held.
    func split(_ claim: Claim, into parts: [CatalogueItem]) async throws -> Bool

    /// Claims waiting downloads for `request.node`, first in queue order, under the fleet's limits
    /// (``CatalogueRules/choose(_:active:perHost:for:)``). Two nodes never hold one download.
    func claim(_ request: ClaimRequest) async throws -> [Claim]

    /// Renews the leases `node` holds, recording their progress; says which it lost.
    func renew(node: String, lease: Duration, progress: [ClaimProgress]) async throws -> Renewal

    /// Ends a claim. Returns `false`, writing nothing, when the claim is no longer held.
    func settle(_ claim: Claim, as outcome: ClaimOutcome) async throws -> Bool

    /// Ends several claims at once (one statement where the catalogue can): for each, in order,
    /// whether it was still held (one no longer held is left as it is).
    func settle(_ ends: [ClaimEnd]) async throws -> [Bool]

    /// Pauses, resumes or removes downloads wherever they are (``CatalogueRules/apply(_:to:requested:node:)``).
    func control(_ control: CatalogueControl, ids: [Download.ID]) async throws -> [Download.ID: ControlEffect]

    /// Forgets downloads that stopped for good (completed, failed or removed), with their parts:
    /// aria2's removeDownloadResult. One still waiting, paused or active is refused
    /// (``CatalogueRules/forgets(_:)``).
    func forget(ids: [Download.ID]) async throws -> [Download.ID: EditEffect]

    /// Forgets every download in `states` (only the stopped ones among them), with their parts:
    /// aria2's purgeDownloadResult. Returns how many.
    func forget(in states: Set<Download.State>) async throws -> Int

    /// Moves a download of the waiting list (``CatalogueRules/waitingList``) `offset` places from
    /// `anchor` (``CatalogueRules/index(moving:from:current:count:)``), taking the priority of the
    /// downloads around its new place: aria2's changePosition. Returns ``EditEffect/moved(to:)``,
    /// or refused for one not in the list.
    func move(_ id: Download.ID, by offset: Int, from anchor: QueueAnchor) async throws -> EditEffect

    /// Replaces a download's URLs (the first, then its mirrors) and options (the adding layer's
    /// text), each when given, and those of its parts: aria2's changeUri and changeOption. Refused
    /// unless it is in the waiting list, or active on `heldBy` (``CatalogueRules/revises(_:node:asker:)``).
    func revise(_ id: Download.ID, urls: [String]?, options: String?, heldBy: String?) async throws -> EditEffect

    /// Takes a node's name for one run of a daemon (`beat.instance`), recording its first heartbeat:
    /// done when no node of that name was heard from within `lease`, or the name is already this
    /// run's. Otherwise nothing is written and the node that holds the name is returned. One
    /// statement (or transaction): two daemons starting at once under one name never both get it.
    func join(_ beat: NodeBeat, lease: Duration) async throws -> FleetNode?

    /// Records a node's heartbeat. Returns `false`, writing nothing, when another run of a daemon
    /// took the name over (``join(_:lease:)``) since this one joined.
    @discardableResult
    func beat(_ beat: NodeBeat) async throws -> Bool

    /// The nodes that beat and have not left, by name.
    func nodes() async throws -> [FleetNode]

    /// Takes a node that stops off the list of nodes (its claims are given back first), unless
    /// another run of a daemon holds the name now (`instance` "" takes it off whichever run holds it).
    func leave(node: String, instance: String) async throws

    /// A wake-up each time downloads are added or resumed, or a control is asked of a node, so that
    /// idle nodes need not poll; a catalogue that cannot tell yields on a timer. Ends with `close()`.
    func changes() -> AsyncStream<Void>

    /// Releases connections and files; later calls fail.
    func close() async
}

extension DownloadCatalogue {
    /// The node that holds `name`, for a ``join(_:lease:)`` that did not get it: as listed, or,
    /// gone from the list since, a stand-in heard from just now (the next try takes the name).
    public func holder(of name: String) async throws -> FleetNode {
        let now = Date()
        return try await nodes().first { $0.name == name }
            ?? FleetNode(name: name, address: "", startedAt: now, lastBeat: now, activeDownloads: 0, bytesPerSecond: 0, silentFor: 0)
    }

    /// Forgets `ids` once they stopped (``forget(ids:)``): one still active (its node was asked
    /// to remove it) is waited for, up to `wait`, and left as it is after that (refused, active).
    public func forgetOnceStopped(_ ids: [Download.ID], within wait: Duration) async throws -> [Download.ID: EditEffect] {
        var effects: [Download.ID: EditEffect] = [:]
        var pending = ids
        let deadline = ContinuousClock.now + wait
        while !pending.isEmpty {
            let round = try await forget(ids: pending)
            effects.merge(round) { _, new in new }
            pending = pending.filter { if case .refused(.active, _) = round[$0] { true } else { false } }
            if pending.isEmpty || ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        return effects
    }

    /// Takes `node` off the list of nodes, whichever run of a daemon holds the name.
    public func leave(node: String) async throws {
        try await leave(node: node, instance: "")
    }

    /// Every entry in `states` (all when `nil`), in queue order, read `pageSize` at a time.
    public func allEntries(in states: Set<Download.State>?, pageSize: Int = 10_000) async throws -> [CatalogueEntry] {
        var entries: [CatalogueEntry] = []
        while true {
            let page = try await self.entries(in: states, offset: entries.count, limit: pageSize)
            entries += page
            if page.count < pageSize { return entries }
        }
    }

    /// The download a full id or a unique prefix of one names (``Download/ID/resolve(_:among:)``'s
    /// errors: not an id, none, several).
    public func resolve(_ text: String) async throws -> Download.ID {
        let needle = text.lowercased()
        if Download.ID.isGID(needle) { return Download.ID(needle) }
        guard !needle.isEmpty, needle.utf8.count <= 16, needle.allSatisfy(\.isHexDigit) else { return try Download.ID.resolve(text, among: []) }
        return try Download.ID.resolve(text, among: try await ids(startingWith: needle, limit: 4))
    }

    public func settle(_ ends: [ClaimEnd]) async throws -> [Bool] {
        var results: [Bool] = []
        for end in ends { results.append(try await settle(end.claim, as: end.outcome)) }
        return results
    }
}
