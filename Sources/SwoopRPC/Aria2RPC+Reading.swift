import Foundation
import SwoopKit

extension Aria2RPC {
    func status(_ details: DownloadDetails) -> Aria2Status {
        Aria2Status(
            download: details.download, record: details.record,
            errorCode: details.record.lastErrorCode.flatMap(Aria2Status.errorCode(stored:))
        )
    }

    /// An unknown id is worded by ``Aria2RPC/rpcError(_:)``, as for every call. A fleet's daemon
    /// shows a download of the shared queue wherever it runs (``fleetStatus(_:_:)``).
    func status(_ p: Parameters) async throws -> Aria2Status {
        if let catalogue = settings.catalogue, let status = try await fleetStatus(p, catalogue) { return status }
        return status(try await manager.details(id: try await p.gid(0, among: try await self.allIDs())))
    }

    func servers(_ p: Parameters) async throws -> JSONValue {
        let status = try await status(p)
        guard status.download.state == .active else {
            throw RPCError.method("No active download for GID#\(status.download.id)")
        }
        let speed = JSONValue.decimal(Aria2Status.whole(status.download.bytesPerSecond))
        let server = JSONValue.object(["uri": .string(status.download.url), "currentUri": .string(status.download.url), "downloadSpeed": speed])
        return .array([.object(["index": .string("1"), "servers": .array([server])])])
    }

    func tellActive(_ p: Parameters) async throws -> JSONValue {
        let keys = try p.keys(0)
        let active = try await manager.runningDetails()
        return Aria2Status.list(active.lazy.map(status), count: active.count, keys: keys)
    }

    /// aria2's stopped list: completed, failed and removed downloads, in the order they stopped.
    func stoppedList() async throws -> [DownloadDetails] {
        try await manager.details(matching: [.completed, .failed, .removed]).sorted { $0.record.updatedAt < $1.record.updatedAt }
    }

    /// aria2's waiting list: the downloads not started, in start order, paused ones in their places.
    /// Only the page asked for is read from the store (a queue of 10,000 lists 1,000 at a time).
    func tellWaiting(_ p: Parameters) async throws -> JSONValue {
        let order = try await manager.queueOrder()
        let page = try Self.page(count: order.count, p)
        let listed = try await manager.details(ids: page.indices.map { order[$0] })
        return Aria2Status.list(listed.lazy.map(status), count: listed.count, keys: page.keys)
    }

    func tellStopped(_ p: Parameters) async throws -> JSONValue {
        let list = try await stoppedList()
        let page = try Self.page(count: list.count, p)
        return Aria2Status.list(page.indices.lazy.map { self.status(list[$0]) }, count: page.indices.count, keys: page.keys)
    }

    /// The indices a tell call's `offset` and `num` select from a list of `count`, and its `keys`.
    static func page(count: Int, _ p: Parameters) throws -> (indices: [Int], keys: [Aria2Status.Key]) {
        (Aria2Paging.indices(count: count, offset: try p.integer(0, "offset"), num: try p.integer(1, "num")), try p.keys(2))
    }

    // MARK: - Options

    func option(_ p: Parameters) async throws -> JSONValue {
        let status = try await status(p)
        let record = status.record
        let configuration = record.settings.applied(to: manager.configuration)
        var options = Self.options(of: configuration)
        let defaultLimit = await manager.defaultRateLimit
        let ownLimit = record.settings.bytesPerSecond ?? defaultLimit ?? 0
        options.merge([
            "dir": .string(record.directory),
            "check-certificate": .string(configuration.tls.insecure ? "false" : "true"),
            "allow-overwrite": .string(record.collisionPolicy == .overwrite ? "true" : "false"),
            "auto-file-renaming": .string(record.collisionPolicy == .rename ? "true" : "false"),
            // Its own limit, or the daemon's default it follows (aria2 copies the global one in).
            "max-download-limit": .decimal(ownLimit),
        ]) { $1 }
        if let name = record.fileName ?? (record.requestedName.isEmpty ? nil : record.requestedName) { options["out"] = .string(name) }
        if !record.headers.isEmpty { options["header"] = .array(record.headers.map { .string("\($0.name): \($0.value)") }) }
        if let checksum = record.checksum { options["checksum"] = .string(checksum) }
        if let proxy = record.settings.proxy { options["all-proxy"] = .string(proxy) }
        return .object(options)
    }

    /// Changes a download's settings: its rate limit at once, the rest from its next run. The
    /// options only a new download can take (dir, out, header, checksum, pause) are refused by name.
    func changeOption(_ p: Parameters) async throws -> JSONValue {
        let id = try await p.gid(0, among: try await self.allIDs())
        let given = try Self.changeableOptions(p)
        let options = try Aria2Options(given)
        let state = try await manager.download(id: id).state
        guard !Aria2Status.isStopped(state) else {
            throw RPCError.method("download \(id) is \(Aria2Status.status(state)): its options cannot change")
        }
        try await manager.changeSettings(id, options.settings)
        return .string("OK")
    }

    /// Replaces URIs of the download's one file: `delUris` removed (each once), `addUris` put at
    /// `position` (default: the end). When the first URI changes, the download moves to the new
    /// one: its bytes are kept when the new URL proves the same file, else it starts over (and says
    /// why). Returns `[deleted, added]`.
    func changeUri(_ p: Parameters) async throws -> JSONValue {
        let id = try await p.gid(0, among: try await self.allIDs())
        let fileIndex = try p.integer(1, "fileIndex")
        guard fileIndex == 1 else { throw RPCError.method("fileIndex must be 1: an HTTP download has one file") }
        let removing = try p.strings(2, "delUris")
        let adding = try p.strings(3, "addUris")
        let position = try p.optionalInteger(4, "position")
        if let position, position < 0 { throw RPCError.method("position must be 0 or more (got \(position))") }
        let manager = self.manager
        let deleted = try await sourceChanges.run(id) { () async throws -> Int in
            let record = try await manager.details(id: id).record
            guard !Aria2Status.isStopped(record.state) else {
                throw RPCError.method("download \(id) is \(Aria2Status.status(record.state)): its URIs cannot change")
            }
            let (uris, deleted) = try Self.edited([record.url] + record.mirrors, removing: removing, adding: adding, at: position)
            try await Self.changeSources(id, of: record, to: uris, in: manager)
            return deleted
        }
        return .array([.integer(Int64(deleted)), .integer(Int64(adding.count))])
    }

    /// The options `changeOption` was given (its second parameter), refused when they name one
    /// that cannot change once a download is added.
    static func changeableOptions(_ p: Parameters) throws -> [String: JSONValue] {
        let given = try p.options(1)
        for name in ["dir", "out", "header", "checksum", "pause", "user-agent", "allow-overwrite", "auto-file-renaming"]
        where given[name] != nil {
            throw RPCError.method("\(name) cannot be changed after a download is added")
        }
        return given
    }

    /// `uris` after `changeUri`: each of `removing` taken out once, `adding` put at `position`
    /// (default: the end). Returns them and how many were taken out. Pure.
    static func edited(_ uris: [String], removing: [String], adding: [String], at position: Int?) throws -> (uris: [String], deleted: Int) {
        var uris = uris
        var deleted = 0
        for uri in removing {
            if let index = uris.firstIndex(of: uri) {
                uris.remove(at: index)
                deleted += 1
            }
        }
        uris.insert(contentsOf: adding, at: min(max(position ?? uris.count, 0), uris.count))
        guard !uris.isEmpty else { throw RPCError.method("a download needs at least one URI") }
        return (uris, deleted)
    }

    /// Moves the manager's download to `uris` (the URL first, then its mirrors).
    static func changeSources(_ id: Download.ID, of record: DownloadRecord, to uris: [String], in manager: DownloadManager) async throws {
        if uris[0] != record.url { try await manager.changeURL(id, to: uris[0]) }
        if Array(uris.dropFirst()) != record.mirrors { try await manager.setMirrors(id, Array(uris.dropFirst())) }
    }

    func globalOption() async -> JSONValue {
        let configuration = manager.configuration
        let stats = await manager.stats()
        var options = Self.options(of: configuration)
        options.merge([
            "dir": .string(settings.roots.defaultDirectory),
            "max-concurrent-downloads": .decimal(stats.maxConcurrentDownloads),
            "max-overall-download-limit": .decimal(await manager.overallRateLimit ?? 0),
            "max-download-limit": .decimal(await manager.defaultRateLimit ?? 0),
            "user-agent": .string(configuration.userAgent),
        ]) { $1 }
        return .object(options)
    }

    /// The options a configuration sets, as aria2 names them.
    static func options(of configuration: Configuration) -> [String: JSONValue] {
        [
            "split": .decimal(configuration.segments.maxConnections),
            "max-connection-per-server": .decimal(configuration.segments.maxConnections),
            "min-split-size": .decimal(configuration.segments.minSplitSize),
            "max-tries": .decimal(configuration.retry.maxRetries + 1),
            // aria2 counts whole seconds, 0 being no wait: a wait under one second is 1, not 0.
            "retry-wait": .decimal(configuration.retry.baseDelay > .zero ? max(1, Aria2Status.whole(configuration.retry.baseDelay.seconds)) : 0),
            "timeout": .decimal(Int(configuration.timeouts.idle.components.seconds)),
            "connect-timeout": .decimal(Int(configuration.timeouts.connect.components.seconds)),
        ]
    }

    /// The global options that change live: how many downloads run at once and the rate limits.
    /// Others are refused by name.
    func changeGlobalOption(_ p: Parameters) async throws -> JSONValue {
        let options = try p.options(0)
        let live: Set = ["max-concurrent-downloads", "max-overall-download-limit", "max-download-limit"]
        if let other = options.keys.sorted().first(where: { !live.contains($0) && options[$0]?.string != nil }) {
            throw RPCError.method("\(other) cannot be changed while the daemon runs (only \(live.sorted().joined(separator: ", ")))")
        }
        if let text = options["max-concurrent-downloads"]?.string {
            try await manager.setMaxConcurrentDownloads(try Aria2Options.count(text, option: "max-concurrent-downloads", in: 1...1000))
        }
        if let text = options["max-overall-download-limit"]?.string {
            let rate = try Aria2Options.size(text, option: "max-overall-download-limit")
            try await manager.setOverallRateLimit(rate == 0 ? nil : rate)
        }
        if let text = options["max-download-limit"]?.string {
            let rate = try Aria2Options.size(text, option: "max-download-limit")
            try await manager.setDefaultRateLimit(rate == 0 ? nil : rate)
        }
        return .string("OK")
    }

    func globalStat() async throws -> JSONValue {
        let stats = await manager.stats()
        let counts = try await manager.counts()
        // The queue's own count of waiting downloads (a row may lag behind a start), and the stored
        // paused and interrupted ones.
        let waiting = stats.waiting + counts[.paused, default: 0] + counts[.interrupted, default: 0]
        let stopped = [Download.State.completed, .failed, .removed].reduce(0) { $0 + counts[$1, default: 0] }
        return Self.globalStat(bytesPerSecond: stats.bytesPerSecond, active: stats.active, waiting: waiting, stopped: stopped)
    }

    /// `getGlobalStat`'s answer, as aria2 writes it (a lone daemon's and a fleet's).
    static func globalStat(bytesPerSecond: Double, active: Int, waiting: Int, stopped: Int) -> JSONValue {
        .object([
            "downloadSpeed": .decimal(Aria2Status.whole(bytesPerSecond)),
            "uploadSpeed": .string("0"),
            "numActive": .decimal(active),
            "numWaiting": .decimal(waiting),
            "numStopped": .decimal(stopped),
            "numStoppedTotal": .decimal(stopped),
        ])
    }

    // MARK: - Forgetting stopped downloads

    /// Forgets every completed, failed and removed download (their files stay).
    func purge() async throws -> JSONValue {
        for details in try await stoppedList() {
            try await forget(details.download.id)
        }
        return .string("OK")
    }

    /// Deletes a stopped download's record (its files stay), without announcing a stop.
    func forget(_ id: Download.ID) async throws {
        forgetting([id], true)
        do {
            try await manager.remove(id)
        } catch {
            forgetting([id], false)
            throw error
        }
    }

    func removeResult(_ p: Parameters) async throws -> JSONValue {
        let id = try await p.gid(0, among: try await self.allIDs())
        let state = try await manager.download(id: id).state
        guard Aria2Status.isStopped(state) else {
            throw RPCError.method("download \(id) is \(Aria2Status.status(state)): only a stopped download's result can be removed")
        }
        try await forget(id)
        return .string("OK")
    }
}
