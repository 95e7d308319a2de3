import SwoopKit

/// A download as aria2's `tellStatus` shows it. Pure: built from a snapshot and its record.
///
/// Every number is a decimal string, as aria2 sends them. An HTTP download is one file with one
/// URI per source (the URL, then its mirrors); pieces are 1 MiB (larger for files over 64 GiB, so
/// that there are at most 65,536), and a piece counts in the bitfield when all its bytes are written.
/// Only the keys asked for are computed.
public struct Aria2Status: Sendable {
    /// The most pieces a bitfield has (8 KiB of bits).
    public static let maxPieces = 1 << 16

    public var download: Download
    public var record: DownloadRecord
    /// The aria2 error code of the last failure, when known (see ``Aria2Status/errorCode(for:)``).
    public var errorCode: Int?

    public init(download: Download, record: DownloadRecord, errorCode: Int? = nil) {
        self.download = download
        self.record = record
        self.errorCode = errorCode
    }

    /// aria2's status word for a state. An interrupted download (its process stopped) is paused
    /// to aria2: stopped, resumable, and not in the queue until unpaused.
    public static func status(_ state: Download.State) -> String {
        switch state {
        case .waiting: return "waiting"
        case .active: return "active"
        case .paused, .interrupted: return "paused"
        case .completed: return "complete"
        case .failed: return "error"
        case .removed: return "removed"
        }
    }

    /// Whether aria2 lists a download in `tellStopped` (complete, error, removed).
    public static func isStopped(_ state: Download.State) -> Bool {
        state == .completed || state == .failed || state == .removed
    }

    /// aria2's exit status number for an error (aria2c's manual, EXIT STATUS), where one fits.
    public static func errorCode(for error: SwoopError) -> Int {
        switch error.code {
        case .timeout: return 2
        case .httpStatus:
            switch error.status {
            case 404?: return 3
            case 401?, 403?, 407?: return 24
            case 503?: return 29
            default: return 22
            }
        case .network: return 6
        case .diskFull: return 9
        case .inUse: return 11
        case .destinationExists: return 13
        case .fileSystem: return 17
        case .invalidResponse: return 22
        case .redirect: return 23
        case .invalidURL, .unsupportedScheme, .invalidArgument: return 28
        case .checksumMismatch: return 32
        default: return 1
        }
    }

    /// aria2's error code for a stored one (``DownloadRecord/lastErrorCode``: `name` or `name:status`).
    public static func errorCode(stored: String) -> Int? {
        let parts = stored.split(separator: ":", maxSplits: 1)
        guard let name = parts.first, let code = SwoopError.Code(name: String(name)) else { return nil }
        return errorCode(for: SwoopError(code, "", status: parts.count == 2 ? Int(parts[1]) : nil))
    }

    /// The file's path: the final path once known, else the name asked for, else "" (aria2 shows
    /// an empty path until the server names the file).
    public var path: String {
        if let destination = download.destination { return destination }
        if !record.requestedName.isEmpty { return Self.join(record.directory, record.requestedName) }
        return ""
    }

    /// The URIs of the file: the URL (`used` once the download has begun, `waiting` before), then
    /// the mirrors waiting.
    public var uris: JSONValue {
        var out = JSONArrayWriter()
        writeURIs(to: &out)
        return out.finish()
    }

    private func writeURIs(to out: inout JSONArrayWriter) {
        let begun = download.state != .waiting || download.completedBytes > 0
        for (uri, status) in [(download.url, begun ? "used" : "waiting")] + record.mirrors.map({ ($0, "waiting") }) {
            var object = JSONObjectWriter(capacity: uri.utf8.count + 32)
            object.member("uri", .string(uri))
            object.member("status", .string(status))
            out.element(object.finish())
        }
    }

    /// The one file of an HTTP download, as `getFiles` and a status's `files` list it.
    public var files: JSONValue {
        var file = JSONObjectWriter(capacity: 256)
        file.member("index", .string("1"))
        file.member("path", .string(path))
        file.member("length", .decimal(download.totalBytes ?? 0))
        file.member("completedLength", .decimal(download.completedBytes))
        file.member("selected", .string("true"))
        file.member("uris", uris)
        var out = JSONArrayWriter()
        out.element(file.finish())
        return out.finish()
    }

    /// The piece length: 1 MiB, doubled until the file has at most ``maxPieces`` pieces.
    public var pieceLength: Int {
        var length = 1 << 20
        let total = download.totalBytes ?? 0
        while total / length >= Self.maxPieces, length < Int.max / 4 { length *= 2 }
        return length
    }

    /// Pieces of ``pieceLength`` bytes; 0 while the length is unknown.
    public var numPieces: Int {
        guard let total = download.totalBytes, total > 0 else { return 0 }
        let length = pieceLength
        return total / length + (total % length == 0 ? 0 : 1)
    }

    /// aria2's bitfield: one bit per piece, high bit first, as hex; "" while the length is unknown.
    public var bitfield: String {
        guard let total = download.totalBytes, total > 0 else { return "" }
        let written: [Range<Int>]
        if download.state == .completed {
            written = [0..<total]
        } else if let segments = record.segments {
            written = segments.map { $0.start..<min(total, $0.start + $0.written) }.filter { !$0.isEmpty }
        } else {
            written = [0..<min(download.completedBytes, total)]
        }
        let length = pieceLength, count = numPieces
        var bytes = [UInt8](repeating: 0, count: (count + 7) / 8)
        // The pieces wholly inside each written range.
        for range in written {
            let first = range.lowerBound / length + (range.lowerBound % length == 0 ? 0 : 1)
            let last = range.upperBound == total ? count : range.upperBound / length
            guard first < last else { continue }
            for piece in first..<last { bytes[piece / 8] |= 0x80 >> UInt8(piece % 8) }
        }
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0x0F)]] }, as: UTF8.self)
    }

    /// A key of aria2's status, in the order aria2 sends them for an HTTP download.
    public enum Key: String, CaseIterable, Sendable {
        case gid, status, totalLength, completedLength, uploadLength, downloadSpeed, uploadSpeed, connections
        case numSeeders, pieceLength, numPieces, bitfield, dir, files, errorCode, errorMessage

        /// The keys a `keys` parameter names: every key when it names none; a name repeated once;
        /// names aria2 has no value for here (BitTorrent's, unknown ones) left out, as aria2 does.
        public static func named(_ names: [String]) -> [Key] {
            guard !names.isEmpty else { return allCases }
            var keys: [Key] = []
            for name in names {
                if let key = Key(rawValue: name), !keys.contains(key) { keys.append(key) }
            }
            return keys
        }
    }

    /// One key's value, or `nil` for a key aria2 would not send for this download.
    public func value(_ key: Key) -> JSONValue? {
        let state = download.state
        switch key {
        case .gid: return .string(download.id.rawValue)
        case .status: return .string(Self.status(state))
        case .totalLength: return .decimal(download.totalBytes ?? 0)
        case .completedLength: return .decimal(download.completedBytes)
        case .uploadLength, .uploadSpeed, .numSeeders: return .string("0")
        case .downloadSpeed: return .decimal(Int(download.bytesPerSecond.rounded()))
        case .connections: return .decimal(state == .active ? max(download.connections, 1) : 0)
        case .pieceLength: return .decimal(pieceLength)
        case .numPieces: return .decimal(numPieces)
        case .bitfield: return .string(bitfield)
        case .dir: return .string(record.directory)
        case .files: return files
        case .errorCode: return .decimal(state == .failed ? (errorCode ?? 1) : 0)
        case .errorMessage: return state == .failed || download.error != nil ? .string(download.error ?? "") : nil
        }
    }

    /// The keys asked for (see ``Key/named(_:)``), in that order, written straight to JSON text
    /// (``JSONValue/raw(_:)``): only what is asked for is computed.
    public func json(_ keys: [Key]) -> JSONValue {
        var object = JSONObjectWriter(capacity: keys.count > 8 ? 640 : 64 * keys.count)
        for key in keys {
            if let value = value(key) { object.member(key.rawValue, value) }
        }
        return object.finish()
    }

    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
