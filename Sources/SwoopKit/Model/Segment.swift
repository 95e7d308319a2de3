/// One byte range of a file downloaded over several connections.
///
/// Bytes `[start, start + written)` are in the part file (handed to `pwrite`); of them,
/// `[start, start + synced)` are known to be on disk. The segment is finished when
/// `start + written == end`.
public struct Segment: Sendable, Codable, Hashable {
    public var start: Int
    /// One past the last byte (exclusive). Shrinks when another connection takes over the tail.
    public var end: Int
    public var written: Int
    public var synced: Int

    public init(start: Int, end: Int, written: Int = 0, synced: Int = 0) {
        self.start = start
        self.end = end
        self.written = written
        self.synced = synced
    }

    /// The next byte to fetch.
    public var next: Int { start + written }
    public var remaining: Int { end - next }
    public var isFinished: Bool { next >= end }
}
