import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import NIOFileSystem
import SwoopRPC

/// `GET /files/GID/NAME?expires=T&signature=S`: the file of a complete download, for a link the
/// page got from `swoop.getFileLink` (``FileLinks``). The link must be this daemon's and current;
/// the file is found by id (the link names no path), must lie inside the download roots (its
/// directory's links followed) and is opened without following a link. One byte range is served
/// as 206 (several: the whole file, as RFC 9110 allows); always as an attachment, never shown.
enum FileServing {
    /// What a `Range` header asks of a file of `size` bytes.
    enum Ask: Equatable {
        case whole
        case part(ClosedRange<Int64>)
        case unsatisfiable
    }

    static func response(_ request: Request, id: String, rpc: Aria2RPC) async -> Response {
        let query = request.uri.queryParameters
        guard rpc.fileLinks.isValid(id: id, expires: String(query["expires"] ?? ""), signature: String(query["signature"] ?? "")) else {
            return WebPage.plain(.forbidden, "this link is not valid, or it has expired: get a new one from the page\n")
        }
        guard let (path, name) = await rpc.finishedFile(id: id) else {
            return WebPage.plain(.notFound, "no finished file for \(id)\n")
        }
        // Only a regular file is opened (a FIFO put in its place would block the open), and never
        // through a link (the open refuses one that appears meanwhile).
        let file: OpenFile
        let size: Int64
        do {
            guard let found = try await FileSystem.shared.info(forFileAt: FilePath(path), infoAboutSymbolicLink: true), found.type == .regular else {
                return WebPage.plain(.notFound, "\(name) is no longer a regular file\n")
            }
            file = OpenFile(try await FileSystem.shared.openFile(
                forReadingAt: FilePath(path), options: OpenOptions.Read(followSymbolicLinks: false, closeOnExec: true)
            ))
            let info = try? await file.handle.info()
            guard let info, info.type == .regular else {
                await file.close()
                return WebPage.plain(.notFound, "\(name) is no longer a regular file\n")
            }
            size = info.size
        } catch {
            return WebPage.plain(.notFound, "cannot open \(name): it was moved, removed or replaced by a link\n")
        }
        var headers = WebPage.securityHeaders
        headers[.contentType] = "application/octet-stream"
        headers[.contentDisposition] = contentDisposition(name)
        headers[.acceptRanges] = "bytes"
        headers[.cacheControl] = "private, no-store"
        // Fetched by this daemon's page only, never shown inside another site's.
        headers[HTTPField.Name("Cross-Origin-Resource-Policy")!] = "same-origin"
        guard size > 0 else {
            await file.close()
            return Response(status: .ok, headers: headers, body: .init())
        }
        let range: ClosedRange<Int64>
        var status = HTTPResponse.Status.ok
        switch ask(request.headers[.range], size: size) {
        case .whole:
            range = 0...(size - 1)
        case .part(let part):
            range = part
            status = .partialContent
            headers[.contentRange] = "bytes \(part.lowerBound)-\(part.upperBound)/\(size)"
        case .unsatisfiable:
            await file.close()
            headers[.contentRange] = "bytes */\(size)"
            return Response(status: .rangeNotSatisfiable, headers: headers)
        }
        let body = ResponseBody(contentLength: range.count) { writer in
            do {
                for try await chunk in file.handle.readChunks(in: range, chunkLength: .kibibytes(256)) {
                    try await writer.write(chunk)
                }
                await file.close()
                try await writer.finish(nil)
            } catch {
                await file.close()
                throw error
            }
        }
        return Response(status: status, headers: headers, body: body)
    }

    /// The one range `header` asks for (`bytes=A-B`, `bytes=A-`, `bytes=-N`); several ranges, or
    /// a header that is not a byte range, get the whole file. Pure.
    static func ask(_ header: String?, size: Int64) -> Ask {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else { return .whole }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return .whole }
        let first = parts[0].isEmpty ? nil : Int64(parts[0])
        let last = parts[1].isEmpty ? nil : Int64(parts[1])
        if !parts[0].isEmpty && first == nil || !parts[1].isEmpty && last == nil { return .whole }
        switch (first, last) {
        case (let start?, let end):
            if let end, end < start { return .whole }
            guard start < size else { return .unsatisfiable }
            return .part(start...min(end ?? size - 1, size - 1))
        case (nil, let suffix?):
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .part(max(0, size - suffix)...(size - 1))
        case (nil, nil):
            return .whole
        }
    }

    /// RFC 3986's unreserved characters: all a name keeps unencoded in `filename*`.
    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// `attachment` with the name twice: plain ASCII for old clients, RFC 5987 UTF-8 for the rest.
    static func contentDisposition(_ name: String) -> String {
        let ascii = String(name.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0 != "\"" && $0 != "\\" ? Character($0) : "_" })
        let encoded = name.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? ""
        return "attachment; filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)"
    }

}

/// An open file that is closed whatever happens to the answer: by the body once it is written, or,
/// when the body never runs (the client went away before the head was written), when the last
/// reference goes. NIO's handle must be closed before it is dropped: dropped open, it stops the
/// process.
final class OpenFile: Sendable {
    let handle: ReadFileHandle
    private let closed = NIOLockedValueBox(false)

    init(_ handle: ReadFileHandle) {
        self.handle = handle
    }

    func close() async {
        guard closed.withLockedValue({ value in defer { value = true }; return !value }) else { return }
        try? await handle.close()
    }

    deinit {
        guard !closed.withLockedValue({ $0 }) else { return }
        let handle = self.handle
        Task { try? await handle.close() }
    }
}
