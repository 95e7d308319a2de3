import Foundation

extension DownloadRecord {
    /// The record's identifying key.
    public var key: DownloadKey { DownloadKey(url: url, directory: directory, requestedName: requestedName) }

    /// A record for a request that has not started: its key, options and priority.
    public init(_ request: DownloadRequest, bootID: String, position: Int = 0) {
        self.init(url: request.key.url, directory: request.directory, requestedName: request.key.requestedName, bootID: bootID)
        apply(request)
        priority = request.priority
        self.position = position
    }

    /// Takes on what `request` asks for: its headers, checksum and collision policy.
    public mutating func apply(_ request: DownloadRequest) {
        headers = request.headers.map { HTTPHeaderField(name: $0.name, value: $0.value) }
        checksum = request.checksum?.description
        collisionPolicy = request.collisionPolicy
    }

    /// The request this record was made from (to run it again).
    public func request() throws -> DownloadRequest {
        var request = try DownloadRequest(url: url, directory: directory, fileName: requestedName.isEmpty ? nil : requestedName)
        request.headers = headers.map { ($0.name, $0.value) }
        request.collisionPolicy = collisionPolicy
        request.checksum = try checksum.map { try Checksum(parsing: $0) }
        request.priority = priority
        return request
    }
}
