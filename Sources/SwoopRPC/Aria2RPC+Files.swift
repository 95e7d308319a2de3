import Foundation
import SwoopKit

// Finished files for the web page: a signed link (`swoop.getFileLink`), and the file behind it.

extension Aria2RPC {
    /// `swoop.getFileLink(token, gid)`: a link to the file of a complete download (``FileLinks``),
    /// good for ``FileLinks/lifetime``.
    func fileLink(_ p: Parameters) async throws -> JSONValue {
        let id = try await p.gid(0, among: try await allIDs())
        let details = try await manager.details(id: id)
        guard details.record.state == .completed, let path = details.record.destinationPath else {
            throw RPCError.method("GID \(id.rawValue) is not complete: it has no file to link to")
        }
        let expires = Int(Date().timeIntervalSince1970 + FileLinks.lifetime)
        return .string(fileLinks.path(id: id, name: (path as NSString).lastPathComponent, expires: expires))
    }

    /// The file a complete download wrote, when a link to it may be served: its path and name, or
    /// `nil` when the id is unknown, the download is not complete, or its directory (links followed)
    /// lies outside the download roots. The last component is the caller's to open without
    /// following a link.
    public func finishedFile(id: String) async -> (path: String, name: String)? {
        guard Download.ID.isGID(id), let details = try? await manager.details(id: Download.ID(id)),
            details.record.state == .completed, let path = details.record.destinationPath,
            settings.roots.contains(directory: (path as NSString).deletingLastPathComponent)
        else { return nil }
        return (path, (path as NSString).lastPathComponent)
    }
}
