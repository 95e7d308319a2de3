/// What an edit of a fleet's catalogue did to one download (``DownloadCatalogue/forget(ids:)``,
/// ``DownloadCatalogue/move(_:by:from:)``, ``DownloadCatalogue/revise(_:urls:options:heldBy:)``).
public enum EditEffect: Sendable, Hashable {
    /// Done.
    case done
    /// Moved: its place in the waiting list now (0 is the first).
    case moved(to: Int)
    /// Not allowed in its state (forgetting an active download, moving a completed one); for an
    /// active one, the node that runs it.
    case refused(Download.State, node: String?)
    /// No such download.
    case notFound

    /// A refusal for a download in `state`, naming `node` only when it runs there.
    public static func refused(_ state: Download.State, holder node: String?) -> EditEffect {
        .refused(state, node: state == .active ? node : nil)
    }
}

/// Where a move counts from: the list's first place, the download's own, or the last place.
public enum QueueAnchor: Sendable, Hashable {
    case start, current, end
}

/// A place in the queue's order: higher priorities first, then lower positions.
public struct QueueSlot: Sendable, Hashable {
    public var priority: Int
    public var position: Int

    public init(priority: Int, position: Int) {
        self.priority = priority
        self.position = position
    }
}

/// Where a moved download goes, and the room made for it first: the downloads of the waiting list
/// of `priority` up to and including position `through` go `by` lower each (none when `nil`).
public struct Placement: Sendable, Hashable {
    public struct Shift: Sendable, Hashable {
        public var priority: Int
        public var through: Int
        public var by: Int

        public init(priority: Int, through: Int, by: Int) {
            self.priority = priority
            self.through = through
            self.by = by
        }
    }

    public var slot: QueueSlot
    public var shift: Shift?

    public init(slot: QueueSlot, shift: Shift? = nil) {
        self.slot = slot
        self.shift = shift
    }
}

extension CatalogueRules {
    /// The states of aria2's waiting list, the one ``DownloadCatalogue/move(_:by:from:)`` orders: not
    /// started yet, or stopped to go on later.
    public static let waitingList: Set<Download.State> = [.waiting, .paused, .interrupted]

    /// The index a download now at `current` in a list of `count` (itself among them) moves to,
    /// `offset` places from `anchor` (the end's 0 is the last place), clamped to the list: aria2's
    /// changePosition arithmetic.
    public static func index(moving offset: Int, from anchor: QueueAnchor, current: Int, count: Int) -> Int {
        let base: Int
        switch anchor {
        case .start: base = 0
        case .current: base = current
        case .end: base = count - 1
        }
        // Clamped first: any Int is a valid (if far) offset, and none may overflow.
        let offset = max(-count, min(count, offset))
        return max(0, min(count - 1, base + offset))
    }

    /// The states of aria2's stopped list: stopped for good.
    public static let stoppedList: Set<Download.State> = [.completed, .failed, .removed]

    /// Whether a download in `state` may be forgotten: only one that stopped for good (aria2's
    /// removeDownloadResult). An active one is removed first.
    public static func forgets(_ state: Download.State) -> Bool {
        stoppedList.contains(state)
    }

    /// Whether a download in `state`, held by `node` when active, may have its sources or options
    /// changed by `asker` (the node answering the call, `nil` for a command without one): one in the
    /// waiting list, or one `asker` runs itself (and changes live). One running elsewhere reads its
    /// options when claimed: it is paused first, changed, and resumed.
    public static func revises(_ state: Download.State, node: String?, asker: String?) -> Bool {
        waitingList.contains(state) || (state == .active && asker != nil && node == asker)
    }

    /// The room left between the positions of downloads added one after the other: a moved
    /// download goes half-way between its neighbours, so about ten moves fit between two before
    /// any download is shifted.
    public static let positionStep = 1024

    /// How long a waiting download with bytes on a node still heard from is left to that node
    /// (``DownloadCatalogue/claim(_:)``), in leases since it was resumed: past it, any node takes it.
    public static let affinityLeases = 4

    /// Where a download goes to sit between `before` and `after` in the waiting list (without it),
    /// `nil` each at that end. `end` is a position after every download's. Two downloads of the
    /// waiting list never share a place: when `before` and `after` are next to each other, the
    /// waiting list's downloads of their priority up to `before` go one step lower first (rare:
    /// ``positionStep`` leaves room).
    public static func placement(between before: QueueSlot?, and after: QueueSlot?, end: Int) -> Placement? {
        switch (before, after) {
        case (nil, nil):
            return nil
        case (nil, let after?):
            return Placement(slot: QueueSlot(priority: after.priority, position: after.position - positionStep))
        case (let before?, nil):
            return Placement(slot: QueueSlot(priority: before.priority, position: max(end, before.position + positionStep)))
        case (let before?, let after?):
            if before.priority != after.priority {
                return Placement(slot: QueueSlot(priority: after.priority, position: after.position - positionStep))
            }
            if after.position - before.position >= 2 {
                return Placement(slot: QueueSlot(priority: before.priority, position: before.position + (after.position - before.position) / 2))
            }
            return Placement(
                slot: QueueSlot(priority: before.priority, position: before.position - positionStep / 2),
                shift: Placement.Shift(priority: before.priority, through: before.position, by: positionStep)
            )
        }
    }
}
