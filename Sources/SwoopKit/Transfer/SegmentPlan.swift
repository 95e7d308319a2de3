/// How a file is split over connections, and how work moves between them. Pure.
///
/// The segments are sorted by `start` and cover `[0, total)` without gaps or overlaps. A
/// connection claims an unfinished segment nobody is working on; when none is left it takes over
/// the second half of the largest remaining range of a busy one ("work stealing"), so a slow
/// connection never holds up the end. A segment is known by its `start`, which never changes.
public struct SegmentPlan: Sendable, Codable, Hashable {
    public private(set) var total: Int
    public private(set) var segments: [Segment]

    /// A plan from saved segments (a resumed download).
    public init(total: Int, segments: [Segment]) {
        self.total = total
        self.segments = segments.sorted { $0.start < $1.start }
    }

    /// Splits `total` bytes into at most `connections` equal segments of at least `minSplitSize`.
    public static func initial(total: Int, connections: Int, minSplitSize: Int) -> SegmentPlan {
        let count = max(1, min(connections, total / max(1, minSplitSize)))
        let size = total / count
        var segments: [Segment] = []
        for i in 0..<count {
            let start = i * size
            segments.append(Segment(start: start, end: i == count - 1 ? total : start + size))
        }
        return SegmentPlan(total: total, segments: segments)
    }

    /// A plan that begins with `pieces` segments of `pieceSize` bytes each (the last one cut at
    /// `total`), already asked for before the length was known (the probe's and the mirrors' first
    /// ranges), then the rest split as ``initial(total:connections:minSplitSize:)`` splits it.
    public static func initial(total: Int, pieces: Int, pieceSize: Int, connections: Int, minSplitSize: Int) -> SegmentPlan {
        let size = max(1, pieceSize)
        let count = min(max(0, pieces), (total + size - 1) / size)
        var segments = (0..<count).map { Segment(start: $0 * size, end: min(($0 + 1) * size, total)) }
        let restStart = segments.last?.end ?? 0
        if restStart < total {
            let rest = initial(total: total - restStart, connections: connections, minSplitSize: minSplitSize)
            segments += rest.segments.map { Segment(start: $0.start + restStart, end: $0.end + restStart) }
        }
        return SegmentPlan(total: total, segments: segments)
    }

    /// Whether the saved segments describe `total` bytes exactly (no gap, no overlap): a plan that
    /// does not is not trusted.
    public var isConsistent: Bool {
        var position = 0
        for segment in segments {
            guard segment.start == position, segment.end >= segment.start, segment.written >= 0,
                segment.written <= segment.end - segment.start, segment.synced >= 0, segment.synced <= segment.written
            else { return false }
            position = segment.end
        }
        return position == total
    }

    public var completedBytes: Int { segments.reduce(0) { $0 + $1.written } }
    public var syncedBytes: Int { segments.reduce(0) { $0 + $1.synced } }
    public var isComplete: Bool { segments.allSatisfy(\.isFinished) }

    public func segment(at start: Int) -> Segment? {
        segments.first { $0.start == start }
    }

    /// An unfinished segment not in `busy`, first by position, or `nil`.
    public func unclaimed(busy: Set<Int>) -> Segment? {
        segments.first { !$0.isFinished && !busy.contains($0.start) }
    }

    /// Splits the busy segment that would give the most, handing its end to a new segment: half of
    /// what is left beyond what its connection has reserved (`reservedUpTo[start]`), but never the
    /// `keeps[start]` bytes just beyond it, the ones its connection will have about as soon as a new
    /// request could deliver them (the server has sent them already, or soon will: ``SegmentPace``).
    /// A split inside those bytes has the server send them twice. Returns the new segment, `nil` when no
    /// segment gives at least `minSplitSize`.
    public mutating func steal(busy: Set<Int>, reservedUpTo: [Int: Int], keeps: [Int: Int] = [:], minSplitSize: Int) -> Segment? {
        var best: (index: Int, split: Int, taken: Int)?
        for (index, segment) in segments.enumerated() where busy.contains(segment.start) && !segment.isFinished {
            let from = max(segment.next, reservedUpTo[segment.start] ?? segment.next)
            let left = segment.end - from
            guard left / 2 >= max(1, minSplitSize) else { continue }
            let split = from + max(left / 2, keeps[segment.start] ?? 0)
            let taken = segment.end - split
            if taken >= max(1, minSplitSize), taken > (best?.taken ?? 0) { best = (index, split, taken) }
        }
        guard let best else { return nil }
        let taken = Segment(start: best.split, end: segments[best.index].end)
        segments[best.index].end = best.split
        segments.insert(taken, at: best.index + 1)
        return taken
    }

    /// Records `bytes` more written at the end of the segment at `start`.
    public mutating func recordWrite(segmentAt start: Int, bytes: Int) {
        guard let index = segments.firstIndex(where: { $0.start == start }) else { return }
        segments[index].written = min(segments[index].written + bytes, segments[index].end - start)
    }

    /// Marks what was written when a flush began as flushed.
    public mutating func recordSynced(_ written: [Int: Int]) {
        for index in segments.indices {
            if let value = written[segments[index].start] {
                segments[index].synced = max(segments[index].synced, min(value, segments[index].written))
            }
        }
    }

    /// What may be trusted after a restart: in the same boot everything recorded as written, after
    /// a reboot only what was flushed.
    public func trusted(sameBoot: Bool) -> SegmentPlan {
        var plan = self
        for index in plan.segments.indices where !sameBoot {
            plan.segments[index].written = plan.segments[index].synced
        }
        return plan
    }
}
