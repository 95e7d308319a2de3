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

/// Where a moved download goes, and the room made for it first: positions of `priority` up to and
/// including `through` one lower each (none when `nil`).
public struct Placement: Sendable, Hashable {
    public var slot: QueueSlot
    public var shift: (priority: Int, through: Int)?

    public init(slot: QueueSlot, shift: (priority: Int, through: Int)? = nil) {
        self.slot = slot
        self.shift = shift
    }

    public static func == (a: Placement, b: Placement) -> Bool {
        a.slot == b.slot && a.shift?.priority == b.shift?.priority && a.shift?.through == b.shift?.through
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(slot)
        hasher.combine(shift?.priority)
        hasher.combine(shift?.through)
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

    /// Whether a download in `state` may be forgotten: only one that stopped for good (aria2's
    /// removeDownloadResult). An active one is removed first.
    public static func forgets(_ state: Download.State) -> Bool {
        state == .completed || state == .failed || state == .removed
    }

    /// Whether a download in `state`, held by `node` when active, may have its sources or options
    /// changed by `asker` (the node answering the call, `nil` for a command without one): one in the
    /// waiting list, or one `asker` runs itself (and changes live). One running elsewhere reads its
    /// options when claimed: it is paused first, changed, and resumed.
    public static func revises(_ state: Download.State, node: String?, asker: String?) -> Bool {
        waitingList.contains(state) || (state == .active && asker != nil && node == asker)
    }

    /// Where a download goes to sit between `before` and `after` in the waiting list (without it),
    /// `nil` each at that end. `end` is a position after every download's. Positions need not be
    /// unique in the queue, but two downloads of the waiting list never share a place: when
    /// `before` and `after` are next to each other, the downloads of their priority up to `before`
    /// move one lower first.
    public static func placement(between before: QueueSlot?, and after: QueueSlot?, end: Int) -> Placement? {
        switch (before, after) {
        case (nil, nil):
            return nil
        case (nil, let after?):
            return Placement(slot: QueueSlot(priority: after.priority, position: after.position - 1))
        case (let before?, nil):
            return Placement(slot: QueueSlot(priority: before.priority, position: max(end, before.position + 1)))
        case (let before?, let after?):
            if before.priority != after.priority {
                return Placement(slot: QueueSlot(priority: after.priority, position: after.position - 1))
            }
            if after.position - before.position >= 2 {
                return Placement(slot: QueueSlot(priority: before.priority, position: before.position + 1))
            }
            return Placement(slot: before, shift: (before.priority, before.position))
        }
    }
}
