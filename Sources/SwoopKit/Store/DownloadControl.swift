/// A request to the process that is transferring a download, left in the store for it: that
/// process watches the store while it runs downloads (see ``DownloadManager/run()``), carries the
/// request out within a second and clears it. `swoop pause`, `rm` and `limit` in another terminal
/// reach a running `swoop get` this way.
public enum DownloadControl: Sendable, Hashable {
    /// Stop and keep the progress (``Download/State/paused``).
    case pause
    /// Stop, delete the part file, keep the record as ``Download/State/removed``.
    case cancel
    /// Stop and forget the download, deleting its files when asked.
    case remove(deletingFile: Bool)
    /// The download's stored settings changed (its rate limit): apply them to the running transfer.
    case applySettings

    /// How the store keeps it.
    public var rawValue: String {
        switch self {
        case .pause: return "pause"
        case .cancel: return "cancel"
        case .remove(let deletingFile): return deletingFile ? "remove-delete-file" : "remove"
        case .applySettings: return "apply-settings"
        }
    }

    /// The control a store kept, or `nil` for one this version does not know.
    public init?(rawValue: String) {
        switch rawValue {
        case "pause": self = .pause
        case "cancel": self = .cancel
        case "remove": self = .remove(deletingFile: false)
        case "remove-delete-file": self = .remove(deletingFile: true)
        case "apply-settings": self = .applySettings
        default: return nil
        }
    }
}
