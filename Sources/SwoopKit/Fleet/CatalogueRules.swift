/// The catalogue's decisions, pure: what a control does to a download in each state, what a claim's
/// end leaves, and which waiting downloads a node may claim under the fleet's limits. Every
/// catalogue (SQLite, PostgreSQL) reads rows, asks these, and writes what they say.
public enum CatalogueRules {
    /// A control's change to one download: its state and what is asked of its holder after it.
    public struct Change: Sendable, Hashable {
        public var state: Download.State
        public var requested: CatalogueControl?
        public var effect: ControlEffect

        public init(state: Download.State, requested: CatalogueControl?, effect: ControlEffect) {
            self.state = state
            self.requested = requested
            self.effect = effect
        }
    }

    /// What `control` does to a download in `state`, held by `node` when active, with `requested`
    /// already asked of it.
    public static func apply(_ control: CatalogueControl, to state: Download.State, requested: CatalogueControl?, node: String?) -> Change {
        let unchanged = Change(state: state, requested: requested, effect: .unchanged(state))
        let refused = Change(state: state, requested: requested, effect: .refused(state))
        switch (control, state) {
        case (.pause, .waiting), (.pause, .interrupted):
            return Change(state: .paused, requested: nil, effect: .done(.paused))
        case (.pause, .active):
            // A remove already asked is stronger than a pause.
            if requested == .remove { return unchanged }
            return Change(state: .active, requested: .pause, effect: .asked(node: node ?? ""))
        case (.pause, .paused):
            return unchanged
        case (.pause, .completed), (.pause, .failed), (.pause, .removed):
            return refused
        case (.resume, .paused), (.resume, .failed), (.resume, .interrupted):
            return Change(state: .waiting, requested: nil, effect: .done(.waiting))
        case (.resume, .active):
            // A pause asked and not yet done is taken back; a remove is not.
            if requested == .pause { return Change(state: .active, requested: nil, effect: .done(.active)) }
            return unchanged
        case (.resume, .waiting):
            return unchanged
        case (.resume, .completed), (.resume, .removed):
            return refused
        case (.remove, .active):
            return Change(state: .active, requested: .remove, effect: .asked(node: node ?? ""))
        case (.remove, .removed):
            return unchanged
        case (.remove, .waiting), (.remove, .paused), (.remove, .interrupted), (.remove, .failed), (.remove, .completed):
            return Change(state: .removed, requested: nil, effect: .done(.removed))
        }
    }

    /// The state a control sees a download in: one active whose lease ran out has no holder (its
    /// node died), and is changed at once as an interrupted one is, its dead holder's claim fenced
    /// off, rather than asked of a node that will never answer.
    public static func seen(_ state: Download.State, leaseExpired: Bool) -> Download.State {
        state == .active && leaseExpired ? .interrupted : state
    }

    /// Whether a control asked of a split download also applies to its part in `state` (by
    /// ``apply(_:to:requested:node:)``). A resume takes back paused parts, and a pause not yet done
    /// of a running one; a failed or removed part stays, and the download is split anew when it
    /// next runs.
    public static func cascades(_ control: CatalogueControl, toPartIn state: Download.State) -> Bool {
        control != .resume || state == .paused || state == .active
    }

    /// The priority of a split download's parts: above every download, so that a file being
    /// fetched by the fleet is finished before others start.
    public static let partPriority = Int(Int32.max)

    /// The state a claim's end leaves. A node that gives a claim back (`released`) while a pause or
    /// a remove was asked of it leaves the download paused or removed: what was asked still holds.
    public static func settled(_ outcome: ClaimOutcome, requested: CatalogueControl?) -> Download.State {
        switch outcome {
        case .completed: return .completed
        case .failed: return .failed
        case .paused: return .paused
        case .removed: return .removed
        case .released:
            switch requested {
            case .pause: return .paused
            case .remove: return .removed
            case .resume, nil: return .waiting
            }
        }
    }

    /// What an outcome writes besides the state: the file's name and length (completed), or the
    /// error (failed).
    public static func details(of outcome: ClaimOutcome) -> (fileName: String?, totalBytes: Int?, error: String?) {
        switch outcome {
        case .completed(let name, let length): return (name, length, nil)
        case .failed(let message): return (nil, nil, message)
        case .paused, .removed, .released: return (nil, nil, nil)
        }
    }

    /// A waiting download a node could claim: its id and host, in queue order.
    public struct Candidate: Sendable, Hashable {
        public var id: Download.ID
        public var host: String

        public init(id: Download.ID, host: String) {
            self.id = id
            self.host = host
        }
    }

    /// The candidates `request` may claim, in order, given the downloads active in the whole fleet
    /// (`active`, and `perHost` of them by host): at most `request.count`, never more than
    /// `maxActive` active in all or `maxPerHost` of one host; a full host is skipped, not waited for.
    public static func choose(_ candidates: [Candidate], active: Int, perHost: [String: Int], for request: ClaimRequest) -> [Download.ID] {
        var room = max(0, request.count)
        if let maxActive = request.maxActive { room = min(room, max(0, maxActive - active)) }
        var perHost = perHost
        var chosen: [Download.ID] = []
        for candidate in candidates where chosen.count < room {
            if let maxPerHost = request.maxPerHost, perHost[candidate.host, default: 0] >= maxPerHost { continue }
            perHost[candidate.host, default: 0] += 1
            chosen.append(candidate.id)
        }
        return chosen
    }

    /// The hosts at their limit, which a catalogue leaves out of its candidates' query.
    public static func fullHosts(_ perHost: [String: Int], maxPerHost: Int?) -> [String] {
        guard let maxPerHost else { return [] }
        return perHost.filter { $0.value >= maxPerHost }.map(\.key).sorted()
    }

    /// How a claim ends for a download's terminal event: `nil` for an event that ends nothing. An
    /// interruption (this node shutting down) gives the claim back.
    public static func outcome(of event: DownloadEvent) -> ClaimOutcome? {
        switch event {
        case .completed(let download), .alreadyComplete(let download):
            let name = download.destination.map { String($0.split(separator: "/").last ?? "") } ?? ""
            return .completed(fileName: name, totalBytes: download.totalBytes ?? download.completedBytes)
        case .failed(_, let error):
            return .failed(error.message)
        case .paused(let download):
            return download.state == .paused ? .paused : .released
        case .removed:
            return .removed
        case .added, .started, .progress, .notice:
            return nil
        }
    }
}
