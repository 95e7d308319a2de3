import Testing

@testable import SwoopConsole

@Suite("LiveRegion")
struct LiveRegionTests {
    static let frames: [(previous: Int, lines: [String], bytes: String)] = [
        (0, [], ""),
        (0, ["a"], "a\u{1B}[K"),
        (0, ["a", "b"], "a\u{1B}[K\nb\u{1B}[K"),
        (1, ["a"], "\ra\u{1B}[K"),
        (2, ["a", "b"], "\r\u{1B}[1Aa\u{1B}[K\nb\u{1B}[K"),
        (5, ["a", "b", "c", "d", "e"], "\r\u{1B}[4Aa\u{1B}[K\nb\u{1B}[K\nc\u{1B}[K\nd\u{1B}[K\ne\u{1B}[K"),
        // Grew: the extra lines are new rows below.
        (1, ["a", "b", "c"], "\ra\u{1B}[K\nb\u{1B}[K\nc\u{1B}[K"),
        // Shrank: clear what is left below the last new line.
        (3, ["a"], "\r\u{1B}[2Aa\u{1B}[K\u{1B}[J"),
        (3, ["a", "b"], "\r\u{1B}[2Aa\u{1B}[K\nb\u{1B}[K\u{1B}[J"),
        // Erased.
        (1, [], "\r\u{1B}[J"),
        (2, [], "\r\u{1B}[1A\u{1B}[J"),
        // An empty line is still a line.
        (0, ["", "b"], "\u{1B}[K\nb\u{1B}[K"),
    ]

    @Test(arguments: frames)
    func frameBytes(previous: Int, lines: [String], bytes: String) {
        #expect(LiveRegion.frame(previousLineCount: previous, lines: lines) == bytes)
    }

    @Test func printAboveErasesPrintsAndRedrawsBelow() {
        #expect(
            LiveRegion.printAbove("done.bin (1 MiB)\n", lines: ["a", "b"])
                == "\r\u{1B}[1A\u{1B}[Jdone.bin (1 MiB)\na\u{1B}[K\nb\u{1B}[K"
        )
        #expect(LiveRegion.printAbove("x\n", lines: ["a"]) == "\r\u{1B}[Jx\na\u{1B}[K")
        #expect(LiveRegion.printAbove("x\n", lines: []) == "x\n")
    }

    @Test func framesCarryNoEscapeInsideLines() {
        // Only the frame's own sequences: ESC appears exactly once per line (ESC[K) plus the moves.
        let bytes = LiveRegion.frame(previousLineCount: 2, lines: ["one", "two"])
        #expect(bytes.filter { $0 == "\u{1B}" }.count == 3)
    }
}
