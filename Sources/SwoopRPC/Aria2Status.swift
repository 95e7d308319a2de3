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
        var out = JSONWriter()
        writeURIs(to: &out)
        return out.finish()
    }

    private func writeURIs(to out: inout JSONWriter) {
        let begun = download.state != .waiting || download.completedBytes > 0
        out.beginArray()
        writeURI(download.url, begun ? "used" : "waiting", to: &out)
        for mirror in record.mirrors { writeURI(mirror, "waiting", to: &out) }
        out.endArray()
    }

    private func writeURI(_ uri: String, _ status: String, to out: inout JSONWriter) {
        out.beginObject()
        out.key("uri")
        out.string(uri)
        out.key("status")
        out.string(status)
        out.endObject()
    }

    /// The one file of an HTTP download, as `getFiles` and a status's `files` list it.
    public var files: JSONValue {
        var out = JSONWriter()
        writeFiles(to: &out)
        return out.finish()
    }

    private func writeFiles(to out: inout JSONWriter) {
        out.beginArray()
        out.beginObject()
        out.key("index")
        out.string("1")
        out.key("path")
        out.string(path)
        out.key("length")
        out.decimal(download.totalBytes ?? 0)
        out.key("completedLength")
        out.decimal(download.completedBytes)
        out.key("selected")
        out.string("true")
        out.key("uris")
        writeURIs(to: &out)
        out.endObject()
        out.endArray()
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

    /// The keys asked for (see ``Key/named(_:)``), in that order, written straight to JSON text
    /// (``JSONValue/raw(_:)``): only what is asked for is computed; `errorMessage` only for a
    /// download that has one, as aria2 sends it.
    public func json(_ keys: [Key]) -> JSONValue {
        var out = JSONWriter(capacity: Self.textSize(keys))
        write(keys, to: &out)
        return out.finish()
    }

    /// A list of statuses (`tellActive`, `tellWaiting`, `tellStopped`), written as one text.
    public static func list(_ statuses: some Sequence<Aria2Status>, count: Int, keys: [Key]) -> JSONValue {
        var out = JSONWriter(capacity: count * Self.textSize(keys) + 2)
        out.beginArray()
        for status in statuses { status.write(keys, to: &out) }
        out.endArray()
        return out.finish()
    }

    /// About how many bytes a status of these keys takes, to reserve them at once.
    private static func textSize(_ keys: [Key]) -> Int {
        keys.count > 8 ? 768 : 64 * keys.count
    }

    func write(_ keys: [Key], to out: inout JSONWriter) {
        out.beginObject()
        for key in keys { write(key, to: &out) }
        out.endObject()
    }

    private func write(_ key: Key, to out: inout JSONWriter) {
        let state = download.state
        if key == .errorMessage, state != .failed, download.error == nil { return }
        out.key(key.rawValue)
        switch key {
        case .gid: out.string(download.id.rawValue)
        case .status: out.string(Self.status(state))
        case .totalLength: out.decimal(download.totalBytes ?? 0)
        case .completedLength: out.decimal(download.completedBytes)
        case .uploadLength, .uploadSpeed, .numSeeders: out.decimal(0)
        case .downloadSpeed: out.decimal(Self.whole(download.bytesPerSecond))
        case .connections: out.decimal(state == .active ? max(download.connections, 1) : 0)
        case .pieceLength: out.decimal(pieceLength)
        case .numPieces: out.decimal(numPieces)
        case .bitfield: out.string(bitfield)
        case .dir: out.string(record.directory)
        case .files: writeFiles(to: &out)
        case .errorCode: out.decimal(state == .failed ? (errorCode ?? 1) : 0)
        case .errorMessage: out.string(download.error ?? "")
        }
    }

    /// A measured or stored number as a whole one for aria2's decimal strings; 0 for one that is
    /// not finite or does not fit (a damaged state database must not stop the daemon).
    public static func whole(_ value: Double) -> Int {
        Int(exactly: value.rounded()) ?? 0
    }

    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
