import Foundation

extension DownloadRecord {
    /// The record's identifying key.
    public var key: DownloadKey { DownloadKey(url: url, directory: directory, requestedName: requestedName) }

    /// A record for a request that has not started: its key, options and priority.
    public init(_ request: DownloadRequest, bootID: String, position: Int = 0) {
        self.init(
            id: request.id ?? .make(), url: request.key.url, directory: request.directory, requestedName: request.key.requestedName,
            bootID: bootID
        )
        apply(request)
        priority = request.priority
        self.position = position
    }

    /// Takes on what `request` asks for, laid over what is stored: its headers (replacing stored
    /// ones of the same name), its checksum and collision policy when it names them, and the
    /// settings it sets (see ``DownloadSettings/overriding(with:)``).
    ///
    /// A completed download does not keep `overwrite` for a request that names no policy: its file
    /// may have been changed since, and is then the user's, not to be replaced without being asked.
    public mutating func apply(_ request: DownloadRequest) {
        headers = Self.merged(headers, request.headers)
        if let checksum = request.checksum { self.checksum = checksum.description }
        if let policy = request.collisionPolicy {
            collisionPolicy = policy
        } else if state == .completed {
            collisionPolicy = .rename
        }
        settings = settings.overriding(with: request.settings)
        if !request.mirrors.isEmpty { mirrors = request.mirrors.map(\.absoluteString) }
    }

    /// The same download started afresh (removed, or its finished file changed): its key, id,
    /// options, settings and queue place kept; its progress, file and validators forgotten.
    public func restarted(bootID: String) -> DownloadRecord {
        var fresh = DownloadRecord(
            id: id, url: url, directory: directory, requestedName: requestedName, bootID: bootID, checksum: checksum, now: createdAt
        )
        (fresh.headers, fresh.collisionPolicy, fresh.settings, fresh.mirrors) = (headers, collisionPolicy, settings, mirrors)
        (fresh.priority, fresh.position) = (priority, position)
        return fresh
    }

    /// `stored` with `new` laid over it by ``HTTPHeaderField/merged(_:_:)``.
    public static func merged(_ stored: [HTTPHeaderField], _ new: [(name: String, value: String)]) -> [HTTPHeaderField] {
        HTTPHeaderField.merged(stored.map { ($0.name, $0.value) }, new).map { HTTPHeaderField(name: $0.name, value: $0.value) }
    }

    /// The request this record was made from (to run it again).
    public func request() throws -> DownloadRequest {
        var request = try DownloadRequest(url: url, directory: directory, fileName: requestedName.isEmpty ? nil : requestedName)
        request.headers = headers.map { ($0.name, $0.value) }
        request.collisionPolicy = collisionPolicy
        request.checksum = try checksum.map { try Checksum(parsing: $0) }
        request.priority = priority
        request.settings = settings
        request.mirrors = try mirrors.map(DownloadRequest.validate)
        return request
    }
}
