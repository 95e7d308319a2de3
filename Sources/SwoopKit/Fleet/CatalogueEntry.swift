import Foundation

/// A download to add to a fleet's catalogue: its sources and how to fetch it, as the daemon that
/// adds it was asked. Where it goes is each node's own business: `options` is the adding layer's
/// text (the daemon keeps aria2's options there, `dir` among them) and every node reads it again
/// against its own download directory.
public struct CatalogueItem: Sendable, Hashable {
    /// The download's identifier (a GID), made by the adder so that it can answer at once.
    public var id: Download.ID
    /// The URL first, then its mirrors.
    public var urls: [String]
    /// The adding layer's options, as text (JSON for the daemon); the catalogue never reads it.
    public var options: String
    /// Higher priorities are claimed first.
    public var priority: Int
    /// Added paused (aria2's `pause=true`): kept in its place and not claimed until resumed.
    public var paused: Bool
    /// For a part of a split download (``DownloadCatalogue/split(_:into:)``): that download, and
    /// the part's range. Parts are claimed as downloads are, and left out of lists and counts.
    public var parent: Download.ID?
    public var part: CataloguePart?

    public init(
        id: Download.ID = .make(), urls: [String], options: String = "{}", priority: Int = 0, paused: Bool = false,
        parent: Download.ID? = nil, part: CataloguePart? = nil
    ) {
        self.id = id
        self.urls = urls
        self.options = options
        self.priority = priority
        self.paused = paused
        self.parent = parent
        self.part = part
    }

    /// The lower-cased host of the first URL: the unit per-host limits count across the fleet.
    public var host: String { CatalogueItem.host(of: urls.first ?? "") }

    /// The lower-cased host of `url`, or the whole text lower-cased when it has none.
    public static func host(of url: String) -> String {
        (URL(string: url)?.host ?? url).lowercased()
    }
}

/// What the catalogue knows of one download.
public struct CatalogueEntry: Sendable, Hashable {
    public var id: Download.ID
    public var urls: [String]
    public var options: String
    public var priority: Int
    /// `waiting`, `active` (claimed), `paused`, `completed`, `failed` or `removed`: a node that stops
    /// (shutdown, a lost connection) gives its claims back as `waiting`.
    public var state: Download.State
    /// The node that holds (or last held) the claim.
    public var node: String?
    /// Counts the claims made on this download; every write of a claim names the epoch it holds.
    public var epoch: Int
    /// What was asked of the node holding the claim and not done yet.
    public var requested: CatalogueControl?
    public var totalBytes: Int?
    public var completedBytes: Int
    public var bytesPerSecond: Double
    /// The file's name where it was written (completed), or being written.
    public var fileName: String?
    /// The directory it was written into, on the node that ran it (`nil` until it reports one).
    public var directory: String?
    /// Why it failed.
    public var error: String?
    public var createdAt: Date
    public var updatedAt: Date
    /// For a part of a split download: that download, and the part's range.
    public var parent: Download.ID?
    public var part: CataloguePart?

    public init(
        id: Download.ID, urls: [String], options: String, priority: Int, state: Download.State, node: String? = nil,
        epoch: Int = 0, requested: CatalogueControl? = nil, totalBytes: Int? = nil, completedBytes: Int = 0,
        bytesPerSecond: Double = 0, fileName: String? = nil, error: String? = nil, createdAt: Date, updatedAt: Date,
        parent: Download.ID? = nil, part: CataloguePart? = nil, directory: String? = nil
    ) {
        self.directory = directory
        self.parent = parent
        self.part = part
        self.id = id
        self.urls = urls
        self.options = options
        self.priority = priority
        self.state = state
        self.node = node
        self.epoch = epoch
        self.requested = requested
        self.totalBytes = totalBytes
        self.completedBytes = completedBytes
        self.bytesPerSecond = bytesPerSecond
        self.fileName = fileName
        self.error = error
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A node's hold on one download: the entry as it was claimed, and the epoch every later write of
/// it must name (a write naming an older epoch is refused: the claim was taken over).
public struct Claim: Sendable, Hashable {
    public var entry: CatalogueEntry
    public var node: String
    public var epoch: Int

    public var id: Download.ID { entry.id }

    public init(entry: CatalogueEntry, node: String, epoch: Int) {
        self.entry = entry
        self.node = node
        self.epoch = epoch
    }
}

/// What a node asks for when it has room for more downloads.
public struct ClaimRequest: Sendable, Hashable {
    /// The claiming node's name.
    public var node: String
    /// At most this many claims.
    public var count: Int
    /// How long a claim lasts unless renewed, on the catalogue's clock.
    public var lease: Duration
    /// At most this many downloads active in the whole fleet (`nil`: no limit).
    public var maxActive: Int?
    /// At most this many downloads of one host active in the whole fleet (`nil`: no limit).
    public var maxPerHost: Int?
    /// Whether parts of split downloads may be claimed (a node writing into the fleet's shared
    /// directory); else only whole downloads.
    public var takesParts: Bool
    /// How long after it was resumed a waiting download with bytes on another node still heard
    /// from is left to that node (each node writing into its own directory).
    public var affinity: Duration

    public init(
        node: String, count: Int, lease: Duration, maxActive: Int? = nil, maxPerHost: Int? = nil, takesParts: Bool = false, affinity: Duration? = nil
    ) {
        self.affinity = affinity ?? lease * CatalogueRules.affinityLeases
        self.node = node
        self.count = count
        self.lease = lease
        self.maxActive = maxActive
        self.maxPerHost = maxPerHost
        self.takesParts = takesParts
    }
}

/// A held claim's progress, written by the heartbeat that renews its lease.
public struct ClaimProgress: Sendable, Hashable {
    public var id: Download.ID
    public var epoch: Int
    public var totalBytes: Int?
    public var completedBytes: Int
    public var bytesPerSecond: Double
    public var fileName: String?
    /// The directory it is written into, on this node.
    public var directory: String?

    public init(
        id: Download.ID, epoch: Int, totalBytes: Int? = nil, completedBytes: Int = 0, bytesPerSecond: Double = 0, fileName: String? = nil,
        directory: String? = nil
    ) {
        self.directory = directory
        self.id = id
        self.epoch = epoch
        self.totalBytes = totalBytes
        self.completedBytes = completedBytes
        self.bytesPerSecond = bytesPerSecond
        self.fileName = fileName
    }
}

/// What a heartbeat learnt: the claims it no longer holds (taken over, or removed under it: stop
/// writing them at once), and what was asked of the ones it still holds.
public struct Renewal: Sendable, Hashable {
    public var lost: Set<Download.ID>
    public var requested: [Download.ID: CatalogueControl]

    public init(lost: Set<Download.ID> = [], requested: [Download.ID: CatalogueControl] = [:]) {
        self.lost = lost
        self.requested = requested
    }
}

/// How a node ends its claim.
public enum ClaimOutcome: Sendable, Hashable {
    /// The file is complete under `fileName`.
    case completed(fileName: String, totalBytes: Int)
    /// It failed for good; resumable by a `resume`.
    case failed(String)
    /// Paused, as was asked.
    case paused
    /// Removed, as was asked.
    case removed
    /// Given back for another node (this one stops: shutdown): waiting again, first in its place.
    case released
}

/// A claim and how it ends, for ending many at once.
public struct ClaimEnd: Sendable, Hashable {
    public var claim: Claim
    public var outcome: ClaimOutcome
    /// The directory the file was written into, on the node that ran it (kept when `nil`).
    public var directory: String?

    public init(_ claim: Claim, _ outcome: ClaimOutcome, directory: String? = nil) {
        self.claim = claim
        self.outcome = outcome
        self.directory = directory
    }
}

/// A request made of the fleet about downloads, by any daemon.
public enum CatalogueControl: String, Sendable, Hashable, CaseIterable {
    case pause
    case resume
    case remove
}

/// What a control did to one download.
public enum ControlEffect: Sendable, Hashable {
    /// Done: the download is in its new state now.
    case done(Download.State)
    /// Asked of the node that runs it, which does it at its next heartbeat (or when woken).
    case asked(node: String)
    /// Nothing to do: it is already so.
    case unchanged(Download.State)
    /// Not allowed from its state (resuming a completed download).
    case refused(Download.State)
    /// No such download.
    case notFound
}

/// A daemon of the fleet, as it last reported itself.
public struct FleetNode: Sendable, Hashable {
    public var name: String
    /// Where its RPC listens, for a page that links to it.
    public var address: String
    public var startedAt: Date
    /// Its last heartbeat, on the catalogue's clock.
    public var lastBeat: Date
    public var activeDownloads: Int
    public var bytesPerSecond: Double
    /// Seconds since the last heartbeat, on the catalogue's clock (so a node's own clock cannot
    /// make it look alive).
    public var silentFor: Double
    /// The download directory it shares with the fleet, or "" when it writes into its own.
    public var sharedDirectory: String

    public init(
        name: String, address: String, startedAt: Date, lastBeat: Date, activeDownloads: Int, bytesPerSecond: Double, silentFor: Double,
        sharedDirectory: String = ""
    ) {
        self.sharedDirectory = sharedDirectory
        self.name = name
        self.address = address
        self.startedAt = startedAt
        self.lastBeat = lastBeat
        self.activeDownloads = activeDownloads
        self.bytesPerSecond = bytesPerSecond
        self.silentFor = silentFor
    }
}

/// A node's heartbeat: who it is and how busy.
public struct NodeBeat: Sendable, Hashable {
    public var name: String
    public var address: String
    public var activeDownloads: Int
    public var bytesPerSecond: Double
    /// The download directory it shares with the fleet, or "" when it writes into its own.
    public var sharedDirectory: String
    /// Other nodes silent this long are taken off the list with this beat: they were killed, or
    /// their machine lost (one stopped gracefully leaves at once). Their claims went to other
    /// nodes long before, when their leases ran out.
    public var forgetsSilentNodesAfter: Duration
    /// Which run of a daemon beats under `name` (``DownloadCatalogue/join(_:lease:)``); "" for none.
    public var instance: String

    public init(
        name: String, address: String = "", activeDownloads: Int = 0, bytesPerSecond: Double = 0, sharedDirectory: String = "",
        forgetsSilentNodesAfter: Duration = .seconds(3600), instance: String = ""
    ) {
        self.instance = instance
        self.sharedDirectory = sharedDirectory
        self.forgetsSilentNodesAfter = forgetsSilentNodesAfter
        self.name = name
        self.address = address
        self.activeDownloads = activeDownloads
        self.bytesPerSecond = bytesPerSecond
    }
}
