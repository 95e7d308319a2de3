import NIOCore
import Testing

@testable import SwoopKit

/// A connection's socket reads: small until a read fills one, then growing to the largest, and
/// never smaller again.
@Suite("Growing read size")
struct GrowingReadSizeTests {
    @Test func readsThatDoNotFillTheBufferKeepItsSize() {
        var reads = GrowingReadSize(initial: 16_384, maximum: 524_288)
        for count in [0, 1, 1_300, 16_383] {
            let grew = reads.record(actualReadBytes: count)
            #expect(!grew)
            #expect(reads.nextBufferSize() == 16_384)
        }
    }

    @Test func aFullReadDoublesTheSizeUpToTheMaximum() {
        var reads = GrowingReadSize(initial: 16_384, maximum: 524_288)
        var sizes: [Int] = []
        while reads.record(actualReadBytes: reads.size) {
            sizes.append(reads.size)
        }
        #expect(sizes == [32_768, 65_536, 131_072, 262_144, 524_288])
        let grew = reads.record(actualReadBytes: 524_288)
        #expect(!grew)
        #expect(reads.nextBufferSize() == 524_288)
    }

    @Test func shortReadsAfterGrowingNeverShrinkIt() {
        var reads = GrowingReadSize(initial: 16_384, maximum: 524_288)
        for _ in 0..<5 { _ = reads.record(actualReadBytes: reads.size) }
        for _ in 0..<10 {
            let grew = reads.record(actualReadBytes: 100)
            #expect(!grew)
        }
        #expect(reads.size == 524_288)
    }

    @Test func aMaximumThatIsNotADoublingOfTheFirstSizeIsReachedExactly() {
        var reads = GrowingReadSize(initial: 16_384, maximum: 100_000)
        while reads.record(actualReadBytes: reads.size) {}
        #expect(reads.size == 100_000)
    }

    @Test func sizesOutOfRangeAreClamped() {
        #expect(GrowingReadSize(initial: 1 << 20, maximum: 65_536).size == 65_536)
        #expect(GrowingReadSize(initial: 0, maximum: 65_536).size == 1)
        #expect(GrowingReadSize(initial: 0, maximum: 0).maximum == 1)
    }

    @Test func theBufferHasTheNextReadsCapacity() {
        var reads = GrowingReadSize(initial: 16_384, maximum: 524_288)
        _ = reads.record(actualReadBytes: 16_384)
        #expect(reads.buffer(allocator: ByteBufferAllocator()).capacity >= 32_768)
        #expect(reads.buffer(allocator: ByteBufferAllocator()).capacity < 65_536)
    }
}
