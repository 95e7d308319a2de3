import Foundation

/// A request to the process that is transferring a download, left in the store for it: that
/// process watches the store while its ``DownloadManager/run()`` runs, carries the request out
/// within a second and answers it. `swoop pause`, `rm` and `limit` in another terminal reach a
/// running `swoop get` this way.
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

/// A control as the store keeps it: one per request (two callers asking at once each get theirs),
/// until the caller withdraws it.
public struct PostedControl: Sendable, Hashable {
    /// How the process that runs the download answered.
    public enum Answer: Sendable, Hashable {
        /// Carried out.
        case done
        /// Not carried out, and why (a download that completed meanwhile cannot be paused).
        case failed(SwoopError.Code, String)
    }

    /// Names this request among all others.
    public var token: String
    public var id: Download.ID
    public var control: DownloadControl
    /// When it was posted: a run that began later leaves it alone (it was meant for an earlier run).
    public var postedAt: Date
    /// `nil` until the process that runs the download answers.
    public var answer: Answer?

    public init(token: String = UUID().uuidString, id: Download.ID, control: DownloadControl, postedAt: Date = Date(), answer: Answer? = nil) {
        self.token = token
        self.id = id
        self.control = control
        self.postedAt = postedAt
        self.answer = answer
    }
}
