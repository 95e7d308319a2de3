import Foundation
import SwoopKit

// aria2's options as a download's request: for `addUri`, and for a fleet's node, which keeps the
// options of a download added anywhere as the adder wrote them and reads them against its own
// download directory.

extension Aria2Options {
    /// The request for `uris` (the URL, then its mirrors) with aria2's `options`, placed under `roots`.
    ///
    /// - Throws: ``RPCError`` naming what cannot be read; ``SwoopError`` for a URL or a path.
    public static func request(uris: [String], options: [String: JSONValue], roots: DownloadRoots) throws -> DownloadRequest {
        guard let url = uris.first else { throw RPCError.method("uris must name at least one URL") }
        let options = try Aria2Options(options)
        let (directory, fileName) = try roots.place(dir: options.dir, out: options.out)
        var request = try DownloadRequest(url: url, directory: directory, fileName: fileName)
        request.mirrors = try uris.dropFirst().map { try DownloadRequest.validate($0) }
        request.headers = options.headers
        request.checksum = options.checksum
        request.collisionPolicy = options.collisionPolicy
        request.settings = options.settings
        request.paused = options.pause
        try request.settings.validate()
        return request
    }

    /// The request a fleet's node makes of an entry it claimed (its options are aria2's, as JSON),
    /// making the directory it goes into. A claimed download is never added paused.
    public static func request(for entry: CatalogueEntry, roots: DownloadRoots) throws -> DownloadRequest {
        guard let options = JSONParser.parse(Array(entry.options.utf8))?.object else {
            throw SwoopError(.invalidArgument, "download \(entry.id) has options that are not a JSON object: \(entry.options)")
        }
        var request: DownloadRequest
        do {
            request = try Self.request(uris: entry.urls, options: options, roots: roots)
        } catch let error as RPCError {
            throw SwoopError(.invalidArgument, error.message)
        }
        request.paused = false
        try FileSystem.createDirectories(request.directory, what: "directory", mode: 0o777)
        return request
    }

    /// The catalogue item for `uris` and aria2's `options`, checked as ``request(uris:options:roots:)``
    /// checks them (on the adding daemon's roots: every node should have the same).
    public static func catalogueItem(uris: [String], options: [String: JSONValue], roots: DownloadRoots) throws -> CatalogueItem {
        let request = try request(uris: uris, options: options, roots: roots)
        return CatalogueItem(urls: uris, options: String(decoding: JSONValue.object(options).serialized(), as: UTF8.self), paused: request.paused)
    }
}

extension Aria2Status {
    /// A fleet's download as `tellStatus` shows it on a daemon that does not run it: from what the
    /// catalogue knows (state, node's progress, file name, error), placed where its options say.
    public init(fleet entry: CatalogueEntry, roots: DownloadRoots) {
        let options = (try? Aria2Options(JSONParser.parse(Array(entry.options.utf8))?.object ?? [:]))
        let place = options.flatMap { try? roots.place(dir: $0.dir, out: $0.out) }
        // Where the node that ran it wrote it; until it says, where this daemon would.
        let directory = entry.directory ?? place?.directory ?? roots.defaultDirectory
        var record = DownloadRecord(
            id: entry.id, url: entry.urls.first ?? "", directory: directory, requestedName: place?.fileName ?? "", bootID: "", now: entry.createdAt
        )
        record.state = entry.state
        if let options {
            // What getOption shows: the options as stored, changed by changeOption.
            record.settings = options.settings
            record.checksum = options.checksum?.description
            record.collisionPolicy = options.collisionPolicy ?? .rename
        }
        record.fileName = entry.fileName
        record.totalBytes = entry.totalBytes
        record.committedBytes = entry.completedBytes
        record.mirrors = Array(entry.urls.dropFirst())
        record.lastError = entry.error
        record.priority = entry.priority
        record.updatedAt = entry.updatedAt
        let download = Download(
            id: entry.id, url: record.url, destination: entry.fileName.map { directory + "/" + $0 }, state: entry.state,
            totalBytes: entry.totalBytes, completedBytes: entry.completedBytes, bytesPerSecond: entry.bytesPerSecond, error: entry.error,
            priority: entry.priority
        )
        self.init(download: download, record: record)
    }
}
