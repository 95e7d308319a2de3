import Testing

@testable import SwoopKit

/// ``FileNaming/lastSegment(of:)`` cuts an ASCII path at its last `/` byte and any other path
/// Character by Character; both must give what splitting into Characters gives.
@Suite("FileNaming.lastSegment")
struct FileNamingSegmentTests {
    /// The reading `lastSegment` replaced: the path split into Characters at `/`.
    private func characterSplit(_ path: String) -> Substring {
        path.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
    }

    @Test(arguments: [
        ("", ""), ("/", ""), ("/a", "a"), ("/a/", ""), ("/dir/file.bin", "file.bin"), ("file.bin", "file.bin"),
        ("//x//y", "y"), ("/a%2Fb", "a%2Fb"), ("/caf\u{E9}/men\u{FC}.txt", "men\u{FC}.txt"),
        // A combining mark after a slash makes one Character: no separator there.
        ("/a/\u{301}b", "a/\u{301}b"), ("/a/b/\u{301}", "b/\u{301}"),
    ])
    func cutsAtTheLastSlash(path: String, expected: String) {
        #expect(FileNaming.lastSegment(of: path) == expected[...])
        #expect(FileNaming.lastSegment(of: path) == characterSplit(path))
    }

    @Test func agreesWithTheCharacterSplitOnGeneratedPaths() {
        let pieces = ["a", "b.bin", "/", "/", "%2F", ".", "..", " ", "\u{E9}", "\u{301}", "\r", "\n", "\\", "~", "\u{1F600}"]
        var generator = SplitMix64(seed: 14)
        for _ in 0..<5_000 {
            let count = Int(generator.next() % 9)
            let path = (0..<count).map { _ in pieces[Int(generator.next() % UInt64(pieces.count))] }.joined()
            #expect(FileNaming.lastSegment(of: path) == characterSplit(path), "path \(path.debugDescription)")
        }
    }
}

/// A small seeded generator, so that a failure names a path that comes again.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
