import NIOCore

/// The size of a connection's socket reads: small at first, doubled each time a read fills it, up
/// to `maximum`, and never smaller again on that connection.
///
/// A connection that fetches small files one after another never fills a small read, so it keeps
/// a small buffer; one that carries a large body reaches `maximum` within a few reads and stays
/// there (a read size that shrank with one short read, as NIO's `AdaptiveRecvByteBufferAllocator`
/// does, would cost a large body's throughput: 256 KiB reads took 1.46 × as long as 512 KiB for
/// 1 GiB into tmpfs). With a fixed 512 KiB, 2,000 files of 64 KiB peaked at 38 MiB RSS against 31–32
/// with 64–128 KiB reads: each connection's buffer is copied rather than reused while a body part
/// still refers to it, and a fresh 512 KiB buffer touches more pages.
struct GrowingReadSize: RecvByteBufferAllocator {
    /// The size of the next read.
    private(set) var size: Int
    /// The largest read.
    let maximum: Int

    /// - Parameters:
    ///   - initial: The first read's size (at least 1; at most `maximum`).
    ///   - maximum: The largest read.
    init(initial: Int, maximum: Int) {
        self.maximum = max(1, maximum)
        self.size = min(max(1, initial), self.maximum)
    }

    func buffer(allocator: ByteBufferAllocator) -> ByteBuffer {
        allocator.buffer(capacity: size)
    }

    func nextBufferSize() -> Int? {
        size
    }

    /// Doubles the size (up to ``maximum``) when the read filled it; returns whether it grew.
    mutating func record(actualReadBytes: Int) -> Bool {
        guard actualReadBytes >= size, size < maximum else { return false }
        size = size > maximum / 2 ? maximum : size * 2
        return true
    }
}
