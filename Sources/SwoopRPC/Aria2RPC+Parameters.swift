import SwoopKit

/// A call's parameters after the token, read by position as aria2 reads them.
struct Parameters {
    let values: [JSONValue]

    init(_ values: [JSONValue]) {
        self.values = values
    }

    subscript(_ index: Int) -> JSONValue? {
        index < values.count ? values[index] : nil
    }

    func string(_ index: Int, _ name: String) throws -> String {
        guard let text = self[index]?.string else { throw RPCError.method("\(name) must be a string") }
        return text
    }

    /// An integer parameter; aria2 takes numbers here, not strings.
    func integer(_ index: Int, _ name: String) throws -> Int {
        guard let value = self[index]?.integer, let int = Int(exactly: value) else {
            throw RPCError.method("\(name) must be an integer")
        }
        return int
    }

    func optionalInteger(_ index: Int, _ name: String) throws -> Int? {
        guard let value = self[index], value != .null else { return nil }
        return try integer(index, name)
    }

    func strings(_ index: Int, _ name: String) throws -> [String] {
        guard let array = self[index]?.array else { throw RPCError.method("\(name) must be an array of strings") }
        return try array.map { value in
            guard let text = value.string else { throw RPCError.method("\(name) must be an array of strings") }
            return text
        }
    }

    /// An options object; absent is empty.
    func options(_ index: Int) throws -> [String: JSONValue] {
        guard let value = self[index], value != .null else { return [:] }
        guard let object = value.object else { throw RPCError.method("options must be an object") }
        return object
    }

    /// The `keys` parameter of the tell methods; absent is every key.
    func keys(_ index: Int) throws -> [Aria2Status.Key] {
        guard let value = self[index], value != .null else { return Aria2Status.Key.allCases }
        return Aria2Status.Key.named(try strings(index, "keys"))
    }

    /// The GID parameter, or a unique prefix of one, among `ids`.
    func gid(_ index: Int, among ids: @autoclosure () async throws -> [Download.ID]) async throws -> Download.ID {
        let text = try string(index, "gid")
        if Download.ID.isGID(text.lowercased()) { return Download.ID(text.lowercased()) }
        return try Download.ID.resolve(text, among: try await ids())
    }
}
