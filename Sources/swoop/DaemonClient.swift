import AsyncHTTPClient
import Foundation
import NIOCore
import SwoopDaemon
import SwoopKit
import SwoopRPC

/// The daemon running on a state directory, reached over its JSON-RPC: `swoop add`, `pause`,
/// `resume`, `rm` and `limit` act through it, so that the change is live in the daemon at once.
struct DaemonClient {
    let address: DaemonAddress

    /// The daemon that runs on `stateDirectory`, if one does.
    static func find(_ global: GlobalOptions) -> DaemonClient? {
        DaemonAddress.read(in: global.stateDirectory).map(DaemonClient.init)
    }

    /// Calls `method` with the secret; its result.
    ///
    /// - Throws: ``SwoopError``: the daemon's own message for a refused call, or why it could not
    ///   be reached.
    func call(_ method: String, _ params: [JSONValue]) async throws -> JSONValue {
        let call = JSONValue.object([
            "jsonrpc": "2.0", "id": "swoop", "method": .string(method), "params": .array([.string("token:\(address.secret)")] + params),
        ])
        // daemon.json is a file on disk: a port NIO would trap on is an error, not a crash.
        guard let url = URL(string: address.url + "/jsonrpc"), url.host != nil, DownloadRequest.portProblem(url) == nil else {
            throw SwoopError(.network, "cannot reach the swoop daemon: its \(DaemonAddress.fileName) names \(address.url), not an address")
        }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(call.serialized())
        let body: ByteBuffer
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
            body = try await response.body.collect(upTo: 64 << 20)
        } catch {
            throw SwoopError(.network, "cannot reach the swoop daemon at \(address.url): \(error)")
        }
        guard let reply = JSONValue.parse(body.readableBytesView)?.object else {
            throw SwoopError(.invalidResponse, "the swoop daemon at \(address.url) did not answer in JSON-RPC")
        }
        if let error = reply["error"]?.object {
            let message = error["message"]?.string ?? "error"
            throw SwoopError(message.hasPrefix("No such download") ? .notFound : .invalidArgument, message)
        }
        return reply["result"] ?? .null
    }

    /// A download the daemon knows: its full id, aria2's word for its state, and its URL.
    struct Found: Sendable {
        var gid: String
        var status: String
        var url: String
        /// Where its file is or will be (`files[0].path`), "" before it has a name.
        var path: String
    }

    /// The download an id or a unique prefix names, in one call.
    func resolve(_ text: String) async throws -> Found {
        let status = try await call("aria2.tellStatus", [.string(text), ["gid", "status", "files"]]).object
        guard let gid = status?["gid"]?.string else { throw SwoopError(.notFound, "no download with id \(text)") }
        let url = status?["files"]?.array?.first?.object?["uris"]?.array?.first?.object?["uri"]?.string ?? ""
        let path = status?["files"]?.array?.first?.object?["path"]?.string ?? ""
        return Found(gid: gid, status: status?["status"]?.string ?? "", url: url, path: path)
    }

    /// The URL of a download the daemon knows.
    func url(of gid: String) async throws -> String {
        try await call("aria2.getUris", [.string(gid)]).array?.first?.object?["uri"]?.string ?? ""
    }
}
