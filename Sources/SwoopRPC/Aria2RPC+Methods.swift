import Foundation
import SwoopKit

extension Aria2RPC {
    /// Every method, as `system.listMethods` lists them.
    public static let methods: [String] = [
        "aria2.addUri", "aria2.addTorrent", "aria2.getPeers", "aria2.addMetalink", "aria2.remove", "aria2.pause",
        "aria2.forcePause", "aria2.pauseAll", "aria2.forcePauseAll", "aria2.unpause", "aria2.unpauseAll",
        "aria2.forceRemove", "aria2.changePosition", "aria2.tellStatus", "aria2.getUris", "aria2.getFiles",
        "aria2.getServers", "aria2.tellActive", "aria2.tellWaiting", "aria2.tellStopped", "aria2.getOption",
        "aria2.changeUri", "aria2.changeOption", "aria2.getGlobalOption", "aria2.changeGlobalOption",
        "aria2.purgeDownloadResult", "aria2.removeDownloadResult", "aria2.getVersion", "aria2.getSessionInfo",
        "aria2.shutdown", "aria2.forceShutdown", "aria2.getGlobalStat", "aria2.saveSession", "system.multicall",
        "system.listMethods", "system.listNotifications", "swoop.getFileLink", "swoop.getDetails", "swoop.removeWithFile",
        "swoop.getNodes",
    ]
    /// ``methods`` to look a call's method up in.
    public static let knownMethods = Set(methods)

    func perform(_ method: String, _ p: Parameters) async throws -> JSONValue {
        if let catalogue = settings.catalogue, let answer = try await performInFleet(method, p, catalogue) { return answer }
        switch method {
        case "aria2.addUri": return try await addUri(p)
        case "aria2.addTorrent", "aria2.getPeers":
            throw RPCError.method("BitTorrent is not supported: Swoop downloads over HTTP and HTTPS")
        case "aria2.addMetalink":
            throw RPCError.method("addMetalink is not supported over RPC: add the Metalink file's URLs with addUri (or `swoop get --metalink`)")
        case "aria2.remove", "aria2.forceRemove": return try await remove(p)
        case "aria2.pause", "aria2.forcePause": return try await pause(p)
        case "aria2.pauseAll", "aria2.forcePauseAll":
            await manager.pauseAll()
            return .string("OK")
        case "aria2.unpause": return try await unpause(p)
        case "aria2.unpauseAll":
            try await manager.resumeAll(states: [.paused, .interrupted])
            return .string("OK")
        case "aria2.changePosition": return try await changePosition(p)
        case "aria2.tellStatus": return try await status(p).json(try p.keys(1))
        case "aria2.getUris": return try await status(p).uris
        case "aria2.getFiles": return try await status(p).files
        case "aria2.getServers": return try await servers(p)
        case "aria2.tellActive": return try await tellActive(p)
        case "aria2.tellWaiting": return try await tellWaiting(p)
        case "aria2.tellStopped": return try await tellStopped(p)
        case "aria2.getOption": return try await option(p)
        case "aria2.changeUri": return try await changeUri(p)
        case "aria2.changeOption": return try await changeOption(p)
        case "aria2.getGlobalOption": return await globalOption()
        case "aria2.changeGlobalOption": return try await changeGlobalOption(p)
        case "aria2.getGlobalStat": return try await globalStat()
        case "aria2.purgeDownloadResult": return try await purge()
        case "aria2.removeDownloadResult": return try await removeResult(p)
        case "aria2.getVersion":
            return .object([
                "version": .string(Self.aria2Version),
                "enabledFeatures": .array(["HTTPS", "Message Digest"].map { .string($0) }),
                "swoopVersion": .string(Swoop.version),
            ])
        case "aria2.getSessionInfo": return .object(["sessionId": .string(sessionID)])
        case "aria2.shutdown", "aria2.forceShutdown":
            shutdown(method == "aria2.forceShutdown")
            return .string("OK")
        case "swoop.getFileLink": return try await fileLink(p)
        case "swoop.getDetails": return try await details(p)
        case "swoop.getNodes": throw RPCError.method("this daemon is not in a fleet: start it with --store to share a queue")
        case "swoop.removeWithFile":
            // Stops it if running and forgets it, with its part file, or its finished file if unchanged.
            let id = try await p.gid(0, among: try await allIDs())
            try await manager.remove(id, deletingFile: true)
            return .string(id.rawValue)
        case "aria2.saveSession":
            // Every change is in the store already.
            return .string("OK")
        default:
            throw RPCError.methodNotFound
        }
    }

    // MARK: - Adding and stopping

    /// An `addUri` call read and checked, ready to add.
    struct PreparedAdd {
        var request: DownloadRequest
        var position: Int?
    }

    func addUri(_ p: Parameters) async throws -> JSONValue {
        if let catalogue = settings.catalogue {
            // A fleet's daemon: into the shared queue, for whichever node has room (checked here first).
            let item = try Aria2Options.catalogueItem(uris: try p.strings(0, "uris"), options: try p.options(1), roots: settings.roots)
            let position = try p.optionalInteger(2, "position")
            if let position, position < 0 { throw RPCError.method("position must be 0 or more (got \(position))") }
            try await catalogue.add([item])
            // Its place in the shared waiting list (claimed meanwhile: it has none, and stays running).
            // Added either way: a failed move is no failed add (a client would add it twice).
            if let position { _ = try? await catalogue.move(item.id, by: position, from: .start) }
            return .string(item.id.rawValue)
        }
        let prepared = try prepareAdd(p)
        let id = try await manager.add(prepared.request)
        return try await finishAdd(id, prepared)
    }

    /// Reads an `addUri` call's URIs, options and position into a request, making its directory.
    func prepareAdd(_ p: Parameters) throws -> PreparedAdd {
        let position = try p.optionalInteger(2, "position")
        if let position, position < 0 { throw RPCError.method("position must be 0 or more (got \(position))") }
        let request = try Aria2Options.request(uris: try p.strings(0, "uris"), options: try p.options(1), roots: settings.roots)
        // aria2 makes the directories a download goes into.
        try FileSystem.createDirectories(request.directory, what: "directory", mode: 0o777)
        return PreparedAdd(request: request, position: position)
    }

    /// What `addUri` does once the download is added (paused or not): move it to its position.
    func finishAdd(_ id: Download.ID, _ prepared: PreparedAdd) async throws -> JSONValue {
        if let position = prepared.position {
            // Past the end: appended, where it already is. Started at once: nothing to move.
            let order = try await manager.queueOrder()
            if order.contains(id), position < order.count - 1 { try await manager.reorder(id, to: position) }
        }
        return .string(id.rawValue)
    }

    func remove(_ p: Parameters) async throws -> JSONValue {
        let id = try await p.gid(0, among: try await self.allIDs())
        let download = try await manager.download(id: id)
        guard !Aria2Status.isStopped(download.state) else {
            throw RPCError.method("download \(id) is \(Aria2Status.status(download.state)): there is nothing to remove")
        }
        try await manager.cancel(id)
        return .string(id.rawValue)
    }

    func pause(_ p: Parameters) async throws -> JSONValue {
        let id = try await p.gid(0, among: try await self.allIDs())
        let state = try await manager.download(id: id).state
        guard state == .waiting || state == .active else {
            throw RPCError.method("download \(id) is \(Aria2Status.status(state)): only an active or waiting one can be paused")
        }
        try await manager.pause(id)
        return .string(id.rawValue)
    }

    func unpause(_ p: Parameters) async throws -> JSONValue {
        let id = try await p.gid(0, among: try await self.allIDs())
        let state = try await manager.download(id: id).state
        // A failed one too (Swoop keeps its progress): it is retried from there.
        guard state == .paused || state == .interrupted || state == .failed else {
            throw RPCError.method("download \(id) is \(Aria2Status.status(state)): only a paused or failed one can be unpaused")
        }
        try await manager.resume(id)
        return .string(id.rawValue)
    }

    func changePosition(_ p: Parameters) async throws -> JSONValue {
        let id = try await p.gid(0, among: try await self.allIDs())
        let pos = try p.integer(1, "pos")
        let how = try p.string(2, "how")
        let order = try await manager.queueOrder()
        guard let current = order.firstIndex(of: id) else {
            throw RPCError.method("download \(id) is not waiting or paused: only those have a place in the queue")
        }
        let target = try Aria2Paging.position(current: current, count: order.count, pos: pos, how: how)
        return .integer(Int64(target == current ? current : try await manager.reorder(id, to: target)))
    }

    func allIDs() async throws -> [Download.ID] {
        try await manager.ids()
    }
}
