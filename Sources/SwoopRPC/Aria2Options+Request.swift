import SwoopKit

extension Aria2Options {
    /// The `addUri` options that ask a daemon for `request` (its URIs are the URL, then the
    /// mirrors): the inverse of ``init(_:)`` for every setting aria2 has a name for.
    public static func json(for request: DownloadRequest) -> [String: JSONValue] {
        var options: [String: JSONValue] = ["dir": .string(request.directory)]
        if let name = request.fileName { options["out"] = .string(name) }
        if !request.headers.isEmpty { options["header"] = .array(request.headers.map { .string("\($0.name): \($0.value)") }) }
        if let checksum = request.checksum { options["checksum"] = .string(checksum.description) }
        options.merge(json(settings: request.settings)) { $1 }
        switch request.collisionPolicy {
        case .overwrite?: options["allow-overwrite"] = .string("true")
        case .fail?: options["auto-file-renaming"] = .string("false")
        case .rename?, nil: break
        }
        if request.paused { options["pause"] = .string("true") }
        return options
    }

    /// The options for a download's own settings (what ``DownloadSettings`` sets), as aria2 names them.
    public static func json(settings: DownloadSettings) -> [String: JSONValue] {
        var options: [String: JSONValue] = [:]
        if let connections = settings.maxConnections {
            options["split"] = .decimal(connections)
            options["max-connection-per-server"] = .decimal(connections)
        }
        if let size = settings.minSplitSize { options["min-split-size"] = .decimal(size) }
        if let rate = settings.bytesPerSecond { options["max-download-limit"] = .decimal(rate) }
        if let retries = settings.maxRetries { options["max-tries"] = .decimal(retries + 1) }
        if let wait = settings.retryWait { options["retry-wait"] = .decimal(max(1, Aria2Status.whole(wait))) }
        if let idle = settings.idleTimeout { options["timeout"] = .decimal(max(1, Aria2Status.whole(idle))) }
        if let connect = settings.connectTimeout { options["connect-timeout"] = .decimal(max(1, Aria2Status.whole(connect))) }
        if let proxy = settings.proxy { options["all-proxy"] = .string(proxy) }
        if let insecure = settings.insecure { options["check-certificate"] = .string(insecure ? "false" : "true") }
        return options
    }
}
