import Foundation
import SwoopKit

// The calls that change a fleet's download rather than start or stop it: its place in the queue,
// its options and URIs, its result, and its file. The catalogue decides what a download's state
// allows; a download this daemon runs is changed live here as well, and its file is this daemon's
// to link to or delete. A file on another node is that node's: the answer names it.
extension Aria2RPC {
    /// The calls of this file, or `nil` for another.
    func performFleetEdit(_ method: String, _ p: Parameters, _ catalogue: any DownloadCatalogue) async throws -> JSONValue? {
        switch method {
        case "aria2.changePosition": return try await fleetMove(p, catalogue)
        case "aria2.changeOption": return try await fleetChangeOption(p, catalogue)
        case "aria2.changeUri": return try await fleetChangeUri(p, catalogue)
        case "aria2.removeDownloadResult": return try await fleetForget(p, catalogue)
        case "aria2.purgeDownloadResult": return try await fleetPurge(catalogue)
        case "swoop.removeWithFile": return try await fleetRemoveWithFile(p, catalogue)
        case "swoop.getFileLink": return try await fleetFileLink(p, catalogue)
        default: return nil
        }
    }

    /// The download a call's first parameter names in the fleet, with what the catalogue knows of it.
    func fleetEntry(_ p: Parameters, _ catalogue: any DownloadCatalogue) async throws -> CatalogueEntry {
        let id = try await catalogue.resolve(try p.string(0, "gid"))
        guard let entry = try await catalogue.entries(ids: [id]).first else { throw RPCError.method("No such download for GID#\(id)") }
        return entry
    }

    /// Whether this daemon runs the download now (and so changes it live).
    func runsHere(_ entry: CatalogueEntry) -> Bool {
        entry.state == .active && settings.node != nil && entry.node == settings.node
    }

    /// The error for an edit the catalogue refused: `what` cannot happen to a download in this
    /// state; `first` says what to do first to a running one.
    func refused(_ effect: EditEffect, _ id: Download.ID, _ what: String, first: String = "pause it first", _ catalogue: any DownloadCatalogue) async -> RPCError {
        switch effect {
        case .refused(.active, let node?):
            return RPCError.method("download \(id) runs on node \(node)\(await address(of: node, catalogue)): \(what) (\(first))")
        case .refused(let state, _):
            return RPCError.method("download \(id) is \(Aria2Status.status(state)): \(what)")
        case .notFound:
            return RPCError.method("No such download for GID#\(id)")
        case .done, .moved:
            return RPCError.method("download \(id): \(what)")
        }
    }

    func fleetMove(_ p: Parameters, _ catalogue: any DownloadCatalogue) async throws -> JSONValue {
        let id = try await catalogue.resolve(try p.string(0, "gid"))
        let effect = try await catalogue.move(id, by: try p.integer(1, "pos"), from: try Aria2Paging.anchor(try p.string(2, "how")))
        guard case .moved(let index) = effect else {
            throw await refused(effect, id, "only a waiting or paused download has a place in the queue", catalogue)
        }
        return .integer(Int64(index))
    }

    func fleetChangeOption(_ p: Parameters, _ catalogue: any DownloadCatalogue) async throws -> JSONValue {
        let entry = try await fleetEntry(p, catalogue)
        let given = try Self.changeableOptions(p)
        let changed = try Aria2Options(given)
        var options = JSONParser.parse(Array(entry.options.utf8))?.object ?? [:]
        options.merge(given) { _, new in new }
        _ = try Aria2Options(options)
        let text = String(decoding: JSONValue.object(options).serialized(), as: UTF8.self)
        let effect = try await catalogue.revise(entry.id, urls: nil, options: text, heldBy: settings.node)
        guard effect == .done else { throw await refused(effect, entry.id, "its options cannot change here", first: "call it there, or pause it first", catalogue) }
        if runsHere(entry) { try await manager.changeSettings(entry.id, changed.settings) }
        return .string("OK")
    }

    func fleetChangeUri(_ p: Parameters, _ catalogue: any DownloadCatalogue) async throws -> JSONValue {
        let entry = try await fleetEntry(p, catalogue)
        guard try p.integer(1, "fileIndex") == 1 else { throw RPCError.method("fileIndex must be 1: an HTTP download has one file") }
        let adding = try p.strings(3, "addUris")
        let position = try p.optionalInteger(4, "position")
        if let position, position < 0 { throw RPCError.method("position must be 0 or more (got \(position))") }
        let (uris, deleted) = try Self.edited(entry.urls, removing: try p.strings(2, "delUris"), adding: adding, at: position)
        for uri in uris { _ = try DownloadRequest.validate(uri) }
        let effect = try await catalogue.revise(entry.id, urls: uris, options: nil, heldBy: settings.node)
        guard effect == .done else { throw await refused(effect, entry.id, "its URIs cannot change here", first: "call it there, or pause it first", catalogue) }
        if runsHere(entry) {
            // Live, as a lone daemon does: the bytes kept when the new URL proves the same file.
            let manager = self.manager
            do {
                try await sourceChanges.run(entry.id) { () async throws -> Void in
                    try await Self.changeSources(entry.id, of: try await manager.details(id: entry.id).record, to: uris, in: manager)
                }
            } catch {
                // Refused here (another download has that URL, say): the fleet keeps the URIs it had.
                _ = try? await catalogue.revise(entry.id, urls: entry.urls, options: nil, heldBy: settings.node)
                throw error
            }
        }
        return .array([.integer(Int64(deleted)), .integer(Int64(adding.count))])
    }

    /// removeDownloadResult: forgotten by the whole fleet, and by this daemon when it ran it.
    func fleetForget(_ p: Parameters, _ catalogue: any DownloadCatalogue) async throws -> JSONValue {
        let id = try await catalogue.resolve(try p.string(0, "gid"))
        let effect = try await catalogue.forget(ids: [id])[id] ?? .notFound
        guard effect == .done else { throw await refused(effect, id, "only a stopped download's result can be removed", first: "remove it first", catalogue) }
        await forgetHere([id])
        return .string("OK")
    }

    func fleetPurge(_ catalogue: any DownloadCatalogue) async throws -> JSONValue {
        _ = try await catalogue.forget(in: CatalogueRules.stoppedList)
        _ = try await purge()
        return .string("OK")
    }

    /// Forgets this daemon's own records of downloads the fleet forgot (those it ran and that stopped).
    func forgetHere(_ ids: [Download.ID]) async {
        for details in (try? await manager.details(ids: ids)) ?? [] where Aria2Status.isStopped(details.download.state) {
            try? await forget(details.download.id)
        }
    }

    /// swoop.removeWithFile: the file is deleted where it is, which must be here. A download not
    /// started anywhere yet has none: it is removed and forgotten.
    func fleetRemoveWithFile(_ p: Parameters, _ catalogue: any DownloadCatalogue) async throws -> JSONValue {
        let entry = try await fleetEntry(p, catalogue)
        if let node = entry.node, node != settings.node {
            throw RPCError.method("download \(entry.id)'s file is on node \(node)\(await address(of: node, catalogue)): call swoop.removeWithFile there")
        }
        if (try? await manager.download(id: entry.id)) != nil {
            try await manager.remove(entry.id, deletingFile: true)
        } else if entry.node != nil {
            let file = entry.fileName.map { name in " (its file, if any: \(entry.directory.map { $0 + "/" } ?? "")\(name))" } ?? ""
            throw RPCError.method("download \(entry.id) is no longer known to this daemon\(file): remove it with aria2.remove and aria2.removeDownloadResult")
        }
        // Ended here, or never claimed: removed in the catalogue (this node's end written at its
        // next sync, at once), then forgotten.
        _ = try await catalogue.control(.remove, ids: [entry.id])
        let effect = try await catalogue.forgetOnceStopped([entry.id], within: .seconds(10))[entry.id] ?? .notFound
        guard effect == .done || effect == .notFound else {
            throw RPCError.method("download \(entry.id)'s file was deleted, but the download is still stopping: aria2.removeDownloadResult forgets it once it has")
        }
        return .string(entry.id.rawValue)
    }

    /// swoop.getFileLink: a link to a file this daemon wrote; one another node wrote is served there.
    func fleetFileLink(_ p: Parameters, _ catalogue: any DownloadCatalogue) async throws -> JSONValue {
        let entry = try await fleetEntry(p, catalogue)
        guard entry.state == .completed else { throw RPCError.method("GID \(entry.id.rawValue) is not complete: it has no file to link to") }
        if let node = entry.node, node != settings.node {
            throw RPCError.method("download \(entry.id)'s file is on node \(node)\(await address(of: node, catalogue)): ask that daemon for the link")
        }
        return try await fileLink(p)
    }

    /// " (at ADDRESS)" for a node that announced where its RPC listens, else nothing.
    func address(of node: String, _ catalogue: any DownloadCatalogue) async -> String {
        guard let address = (try? await catalogue.nodes())?.first(where: { $0.name == node })?.address, !address.isEmpty else { return "" }
        return " (at \(address))"
    }
}
