import Foundation
import SwoopKit

// Finished files for the web page: a signed link (`swoop.getFileLink`), and the file behind it.

extension Aria2RPC {
    /// `swoop.getFileLink(token, gid)`: a link to the file of a complete download (``FileLinks``),
    /// good for ``FileLinks/lifetime``.
    func fileLink(_ p: Parameters) async throws -> JSONValue {
        let id = try await p.gid(0, among: try await allIDs())
        guard let path = Self.completedFile(of: try await manager.details(id: id)) else {
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
            let path = Self.completedFile(of: details), settings.roots.contains(directory: (path as NSString).deletingLastPathComponent)
        else { return nil }
        return (path, (path as NSString).lastPathComponent)
    }

    /// The file a download wrote, when it is complete.
    private static func completedFile(of details: DownloadDetails) -> String? {
        details.record.state == .completed ? details.record.destinationPath : nil
    }
}

// MARK: - Details for the page

extension Aria2RPC {
    /// `swoop.getDetails(token, gid)`: what the page's detail view shows beyond aria2's status: the
    /// sources, the file, its validators, its segments, the retry under way and the last error.
    /// Request headers are left out: they may hold credentials.
    func details(_ p: Parameters) async throws -> JSONValue {
        let status = try await status(p)
        let (record, download) = (status.record, status.download)
        var object: [String: JSONValue] = [
            "gid": .string(record.id.rawValue),
            "state": .string(download.state.rawValue),
            "url": .string(record.url),
            "mirrors": .array(record.mirrors.map(JSONValue.string)),
            "path": record.destinationPath.map(JSONValue.string) ?? .null,
            "totalLength": record.totalBytes.map { .decimal($0) } ?? .null,
            "completedLength": .decimal(download.completedBytes),
            "etag": record.etag.map(JSONValue.string) ?? .null,
            "lastModified": record.lastModified.map(JSONValue.string) ?? .null,
            "checksum": record.checksum.map(JSONValue.string) ?? .null,
            "lastError": record.lastError.map(JSONValue.string) ?? .null,
            "createdAt": .double(record.createdAt.timeIntervalSince1970),
            "updatedAt": .double(record.updatedAt.timeIntervalSince1970),
            "segments": .array((record.segments ?? []).map { segment in
                .object(["start": .decimal(segment.start), "end": .decimal(segment.end), "written": .decimal(segment.written)])
            }),
        ]
        if let retry = download.retry {
            object["retry"] = .object(["attempt": .decimal(retry.attempt), "maxRetries": .decimal(retry.maxRetries), "reason": .string(retry.reason)])
        }
        return .object(object)
    }
}
