/// What identifies a download in the store: the same URL to the same directory under the same
/// requested name is the same download.
public struct DownloadKey: Sendable, Hashable {
    public var url: String
    public var directory: String
    /// The name given with `-o` (or in a `-i` list), or "".
    public var requestedName: String

    public init(url: String, directory: String, requestedName: String) {
        self.url = url
        self.directory = directory
        self.requestedName = requestedName
    }
}

/// One request header, as stored.
public struct HTTPHeaderField: Sendable, Codable, Hashable {
    public var name: String
    public var value: String
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
