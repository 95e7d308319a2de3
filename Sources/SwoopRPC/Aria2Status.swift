import SwoopKit

/// A download as aria2's `tellStatus` shows it. Pure: built from a snapshot and its record.
///
/// Every number is a decimal string, as aria2 sends them. An HTTP download is one file with one
/// URI per source (the URL, then its mirrors); pieces are 1 MiB, and a piece counts in the bitfield
/// when all its bytes are written.
public struct Aria2Status: Sendable {
    public static let pieceLength = 1 << 20

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

    /// The file's path: the final path once known, else the name asked for, else "" (aria2 shows
    /// an empty path until the server names the file).
    public var path: String {
        if let destination = download.destination { return destination }
        if !record.requestedName.isEmpty { return Self.join(record.directory, record.requestedName) }
        return ""
    }

    /// The URIs of the file: the URL in use, then the mirrors waiting.
    public var uris: JSONValue {
        .array(
            ([(download.url, "used")] + record.mirrors.map { ($0, "waiting") }).map { uri, status in
                .object(["uri": .string(uri), "status": .string(status)])
            }
        )
    }

    public var files: JSONValue {
        .array([
            .object([
                "index": .string("1"),
                "path": .string(path),
                "length": .decimal(download.totalBytes ?? 0),
                "completedLength": .decimal(download.completedBytes),
                "selected": .string("true"),
                "uris": uris,
            ])
        ])
    }

    /// Pieces of ``pieceLength`` bytes; 0 while the length is unknown.
    public var numPieces: Int {
        guard let total = download.totalBytes, total > 0 else { return 0 }
        return (total + Self.pieceLength - 1) / Self.pieceLength
    }

    /// aria2's bitfield: one bit per piece, high bit first, as hex; "" while the length is unknown.
    public var bitfield: String {
        guard let total = download.totalBytes, total > 0 else { return "" }
        let written: [Range<Int>]
        if download.state == .completed {
            written = [0..<total]
        } else if let segments = record.segments {
            written = segments.map { $0.start..<($0.start + $0.written) }
        } else {
            written = [0..<min(download.completedBytes, total)]
        }
        var bytes = [UInt8](repeating: 0, count: (numPieces + 7) / 8)
        for piece in 0..<numPieces {
            let range = piece * Self.pieceLength..<min(total, (piece + 1) * Self.pieceLength)
            if written.contains(where: { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }) {
                bytes[piece / 8] |= 0x80 >> UInt8(piece % 8)
            }
        }
        let hex = Array("0123456789abcdef")
        return String(bytes.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0x0F)]] })
    }

    /// Every key aria2 sends for an HTTP download.
    public var all: [String: JSONValue] {
        let state = download.state
        var status: [String: JSONValue] = [
            "gid": .string(download.id.rawValue),
            "status": .string(Self.status(state)),
            "totalLength": .decimal(download.totalBytes ?? 0),
            "completedLength": .decimal(download.completedBytes),
            "uploadLength": .string("0"),
            "downloadSpeed": .decimal(Int(download.bytesPerSecond.rounded())),
            "uploadSpeed": .string("0"),
            "connections": .decimal(state == .active ? max(download.connections, 1) : 0),
            "numSeeders": .string("0"),
            "pieceLength": .decimal(Self.pieceLength),
            "numPieces": .decimal(numPieces),
            "bitfield": .string(bitfield),
            "dir": .string(record.directory),
            "files": files,
            "errorCode": .decimal(state == .failed ? (errorCode ?? 1) : 0),
        ]
        if state == .failed || download.error != nil {
            status["errorMessage"] = .string(download.error ?? "")
        }
        return status
    }

    /// The keys asked for (all when `keys` is empty), as aria2's `keys` parameter selects.
    public func json(keys: [String]) -> JSONValue {
        let all = self.all
        guard !keys.isEmpty else { return .object(all) }
        return .object(all.filter { keys.contains($0.key) })
    }

    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
