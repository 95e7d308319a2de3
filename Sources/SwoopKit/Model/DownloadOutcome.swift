/// How a download ended.
public enum DownloadOutcome: Sendable, Hashable {
    /// The file was downloaded (or finished) now.
    case downloaded(Download)
    /// The file was already complete from an earlier run; nothing was transferred.
    case alreadyComplete(Download)

    /// The final snapshot.
    public var download: Download {
        switch self {
        case .downloaded(let d), .alreadyComplete(let d): return d
        }
    }
}

