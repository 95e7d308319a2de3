import Foundation
import SwoopKit

// A fleet's daemon answers for the whole fleet: its lists, its counts and its controls are the
// shared catalogue's, whichever daemon runs a download. A download running here is shown live from
// this daemon's manager (it runs under the catalogue's id); one running elsewhere as its node's last
// heartbeat left it (progress at most a heartbeat old).
extension Aria2RPC {
    /// The calls a fleet's daemon answers from the catalogue, or `nil` for those it answers as any
    /// daemon does (from its own manager).
    func performInFleet(_ method: String, _ p: Parameters, _ catalogue: any DownloadCatalogue) async throws -> JSONValue? {
        switch method {
        case "aria2.tellActive": return try await fleetActive(p, catalogue)
        case "aria2.tellWaiting":
            return try await fleetPage(p, catalogue, states: CatalogueRules.waitingList) {
                try await catalogue.entries(in: CatalogueRules.waitingList, offset: $0, limit: $1)
            }
        case "aria2.tellStopped":
            return try await fleetPage(p, catalogue, states: CatalogueRules.stoppedList) { try await catalogue.stopped(offset: $0, limit: $1) }
        case "aria2.pause", "aria2.forcePause": return try await fleetControl(.pause, p, catalogue)
        case "aria2.unpause": return try await fleetControl(.resume, p, catalogue)
        case "aria2.remove", "aria2.forceRemove": return try await fleetControl(.remove, p, catalogue)
        case "aria2.pauseAll", "aria2.forcePauseAll": return try await fleetControlAll(.pause, catalogue, states: [.waiting, .active])
        case "aria2.unpauseAll": return try await fleetControlAll(.resume, catalogue, states: [.paused, .interrupted])
        case "aria2.getGlobalStat": return try await fleetStat(catalogue)
        case "swoop.getNodes": return try await fleetNodes(catalogue)
        default: return try await performFleetEdit(method, p, catalogue)
        }
    }

    /// The page size a whole list is read in.
    static let fleetPageSize = 1000

    /// A fleet's download as this daemon shows it: live from its own manager while it runs here (or
    /// when the catalogue does not know it, or agrees on its state), else from the catalogue.
    func fleetStatus(local: DownloadDetails?, _ entry: CatalogueEntry?) -> Aria2Status? {
        if let local, local.download.state == .active || entry == nil || entry?.state == local.download.state {
            return status(local)
        }
        return entry.map { Aria2Status(fleet: $0, roots: settings.roots) }
    }

    /// A list's entries as this daemon shows them, its own downloads among them read in one go.
    func fleetStatuses(_ entries: [CatalogueEntry]) async -> [Aria2Status] {
        let local = ((try? await manager.details(ids: entries.map(\.id))) ?? []).reduce(into: [Download.ID: DownloadDetails]()) {
            $0[$1.download.id] = $1
        }
        return entries.compactMap { fleetStatus(local: local[$0.id], $0) }
    }

    /// `tellStatus` and the calls that read one download (getUris, getFiles, getOption, …).
    func fleetStatus(_ p: Parameters, _ catalogue: any DownloadCatalogue) async throws -> Aria2Status? {
        // A unique prefix names a download as it does on a lone daemon; none in the fleet: this
        // daemon's own (lone path), unless it stopped (the fleet forgot it).
        let id: Download.ID
        do {
            id = try await catalogue.resolve(try p.string(0, "gid"))
        } catch let error as SwoopError where error.code == .notFound {
            guard let local = try? await manager.details(id: try await p.gid(0, among: try await allIDs())) else { return nil }
            if Aria2Status.isStopped(local.download.state) { throw RPCError.method("No such download for GID#\(local.download.id)") }
            return status(local)
        }
        let (local, entry) = (try? await manager.details(id: id), try await catalogue.entries(ids: [id]).first)
        // A download that stopped here and that the fleet forgot since (removeDownloadResult on
        // another daemon) is gone, as it is from the fleet's lists.
        if entry == nil, let local, Aria2Status.isStopped(local.download.state) { throw RPCError.method("No such download for GID#\(id)") }
        return fleetStatus(local: local, entry)
    }

    func fleetActive(_ p: Parameters, _ catalogue: any DownloadCatalogue) async throws -> JSONValue {
        let keys = try p.keys(0)
        let statuses = await fleetStatuses(try await catalogue.allEntries(in: [.active], pageSize: Self.fleetPageSize))
        return Aria2Status.list(statuses, count: statuses.count, keys: keys)
    }

    /// `tellWaiting` and `tellStopped`: the list of the downloads in `states`, in `read`'s order
    /// (an offset and a limit); only the page asked for is read from the catalogue.
    func fleetPage(
        _ p: Parameters, _ catalogue: any DownloadCatalogue, states: Set<Download.State>,
        read: (_ offset: Int, _ limit: Int) async throws -> [CatalogueEntry]
    ) async throws -> JSONValue {
        let counts = try await catalogue.counts()
        let page = try Self.page(count: states.reduce(0) { $0 + counts[$1, default: 0] }, p)
        guard let low = page.indices.min(), let high = page.indices.max() else { return .array([]) }
        let entries = try await read(low, high - low + 1)
        let statuses = await fleetStatuses(page.indices.filter { $0 - low < entries.count }.map { entries[$0 - low] })
        return Aria2Status.list(statuses, count: statuses.count, keys: page.keys)
    }

    /// Pause, unpause or remove, wherever the download runs (the node that runs it does it at its
    /// next heartbeat, or at once when the catalogue wakes it).
    func fleetControl(_ control: CatalogueControl, _ p: Parameters, _ catalogue: any DownloadCatalogue) async throws -> JSONValue {
        let id = try await catalogue.resolve(try p.string(0, "gid"))
        switch try await catalogue.control(control, ids: [id])[id] ?? .notFound {
        case .done, .asked:
            return .string(id.rawValue)
        case .unchanged(let state), .refused(let state):
            throw RPCError.method("download \(id) is \(Aria2Status.status(state)): \(Self.refusal(control))")
        case .notFound:
            throw RPCError.method("No such download for GID#\(id)")
        }
    }

    /// The words for a control a download's state does not allow (the same as a lone daemon's).
    static func refusal(_ control: CatalogueControl) -> String {
        switch control {
        case .pause: return "only an active or waiting one can be paused"
        case .resume: return "only a paused or failed one can be unpaused"
        case .remove: return "there is nothing to remove"
        }
    }

    func fleetControlAll(_ control: CatalogueControl, _ catalogue: any DownloadCatalogue, states: Set<Download.State>) async throws -> JSONValue {
        let ids = try await catalogue.allEntries(in: states, pageSize: Self.fleetPageSize).map(\.id)
        var start = 0
        while start < ids.count {
            let end = min(ids.count, start + Self.fleetPageSize)
            _ = try await catalogue.control(control, ids: Array(ids[start..<end]))
            start = end
        }
        return .string("OK")
    }

    /// The fleet's counts, and the speed of the nodes heard from within a lease (a node silent
    /// longer is taken for dead: its downloads are being taken over).
    func fleetStat(_ catalogue: any DownloadCatalogue) async throws -> JSONValue {
        let counts = try await catalogue.counts()
        let silence = settings.nodeSilence.seconds
        let speed = try await catalogue.nodes().filter { $0.silentFor < silence }.reduce(0) { $0 + $1.bytesPerSecond }
        let count = { (states: Set<Download.State>) in states.reduce(0) { $0 + counts[$1, default: 0] } }
        return Self.globalStat(
            bytesPerSecond: speed, active: counts[.active, default: 0], waiting: count(CatalogueRules.waitingList), stopped: count(CatalogueRules.stoppedList)
        )
    }

    /// `swoop.getNodes`: the fleet's daemons, as `swoop nodes` lists them (numbers as aria2 writes
    /// them, decimal strings; times in seconds since 1970).
    func fleetNodes(_ catalogue: any DownloadCatalogue) async throws -> JSONValue {
        .array(
            try await catalogue.nodes().map { node in
                .object([
                    "name": .string(node.name),
                    "address": .string(node.address),
                    "startedAt": .decimal(Int(node.startedAt.timeIntervalSince1970)),
                    "lastHeartbeat": .decimal(Int(node.lastBeat.timeIntervalSince1970)),
                    "silentFor": .decimal(Int(node.silentFor.rounded(.down))),
                    "numActive": .decimal(node.activeDownloads),
                    "downloadSpeed": .decimal(Aria2Status.whole(node.bytesPerSecond)),
                ])
            }
        )
    }
}
