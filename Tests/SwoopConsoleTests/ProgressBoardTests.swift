import SwoopKit
import Testing

@testable import SwoopConsole

@Suite("ProgressBoard")
struct ProgressBoardTests {
    typealias F = Fixtures

    static let downloadLines: [(width: Int, download: Download, line: String)] = [
        // 200 columns: everything, uncut.
        (200, F.iso, "ubuntu-24.04.1-desktop-amd64.iso  45.0%  2.51 GiB / 5.59 GiB  40.0 MiB/s  ETA 1m19s"),
        (200, F.stream, "stream.log  1.43 MiB  195 KiB/s"),
        (200, F.stalled, "stalled.zip  50.0%  512 KiB / 1.00 MiB  0 B/s  ETA --"),
        (
            200, F.long,
            "a-very-long-file-name-that-goes-on-and-on-forever-and-ever.tar.gz  10.0%  1.00 MiB / 10.0 MiB  1.00 MiB/s  ETA 9s"
        ),
        (200, F.wide, "日本語のファイル名がとても長い場合のテストです.mp4  25.0%  25.0 MiB / 100 MiB  5.00 MiB/s  ETA 15s"),
        (200, F.noName, "big file.iso  50.0%  1.00 KiB / 2.00 KiB  1.00 KiB/s  ETA 1s"),
        // 80 columns: long names are cut in the middle, keeping the extension; wide characters count twice.
        (80, F.iso, "ubuntu-24.04.1…top-amd64.iso  45.0%  2.51 GiB / 5.59 GiB  40.0 MiB/s  ETA 1m19s"),
        (80, F.stream, "stream.log  1.43 MiB  195 KiB/s"),
        (80, F.stalled, "stalled.zip  50.0%  512 KiB / 1.00 MiB  0 B/s  ETA --"),
        (80, F.long, "a-very-long-fil…and-ever.tar.gz  10.0%  1.00 MiB / 10.0 MiB  1.00 MiB/s  ETA 9s"),
        (80, F.wide, "日本語のファイル…テストです.mp4  25.0%  25.0 MiB / 100 MiB  5.00 MiB/s  ETA 15s"),
        (80, F.noName, "big file.iso  50.0%  1.00 KiB / 2.00 KiB  1.00 KiB/s  ETA 1s"),
        // 40 columns: names down to 10 columns, then the ETA and the speed go.
        (40, F.iso, "ubunt…4.iso  45.0%  2.51 GiB / 5.59 GiB"),
        (40, F.stream, "stream.log  1.43 MiB  195 KiB/s"),
        (40, F.stalled, "stalled.zip  50.0%  512 KiB / 1.00 MiB"),
        (40, F.long, "a-ver…ar.gz  10.0%  1.00 MiB / 10.0 MiB"),
        (40, F.wide, "日本語….mp4  25.0%  25.0 MiB / 100 MiB"),
        (40, F.noName, "big f…e.iso  50.0%  1.00 KiB / 2.00 KiB"),
        // 20 columns: the sizes go too; a name that still does not fit is cut below 10 columns.
        (20, F.iso, "ubuntu…4.iso  45.0%"),
        (20, F.stream, "stre….log  1.43 MiB"),
        (20, F.stalled, "stalled.zip  50.0%"),
        (20, F.long, "a-very…ar.gz  10.0%"),
        (20, F.wide, "日本語….mp4  25.0%"),
        (20, F.noName, "big file.iso  50.0%"),
    ]

    @Test(arguments: downloadLines)
    func downloadLine(width: Int, download: Download, line: String) {
        let rendered = ProgressBoard(width: width).downloadLine(download)
        #expect(rendered == line)
        #expect(DisplayWidth.of(rendered) <= width - 1)
    }

    static let busy = BoardSummary(done: 12, active: 4, waiting: 184, failed: 1, bytesPerSecond: 40_055_194, remainingBytes: 2_884_000_000)
    static let idle = BoardSummary()
    static let unknownRemaining = BoardSummary(done: 1, active: 2, waiting: 0, failed: 0, bytesPerSecond: 1000, remainingBytes: nil)
    static let stalled = BoardSummary(done: 0, active: 1, waiting: 2, failed: 0, bytesPerSecond: 0, remainingBytes: 5)

    static let summaryLines: [(width: Int, summary: BoardSummary, line: String)] = [
        (200, busy, "[done 12 · active 4 · waiting 184 · failed 1]  38.2 MiB/s  ETA 1m12s"),
        (80, busy, "[done 12 · active 4 · waiting 184 · failed 1]  38.2 MiB/s  ETA 1m12s"),
        (69, busy, "[done 12 · active 4 · waiting 184 · failed 1]  38.2 MiB/s  ETA 1m12s"),
        // Narrower: the ETA goes, then the speed; the words stay while they fit.
        (68, busy, "[done 12 · active 4 · waiting 184 · failed 1]  38.2 MiB/s"),
        (58, busy, "[done 12 · active 4 · waiting 184 · failed 1]  38.2 MiB/s"),
        (57, busy, "[done 12 · active 4 · waiting 184 · failed 1]"),
        (46, busy, "[done 12 · active 4 · waiting 184 · failed 1]"),
        // Only then the short counts, with what fits beside them.
        (45, busy, "[d12 a4 w184 f1]  38.2 MiB/s  ETA 1m12s"),
        (40, busy, "[d12 a4 w184 f1]  38.2 MiB/s  ETA 1m12s"),
        (39, busy, "[d12 a4 w184 f1]  38.2 MiB/s"),
        (30, busy, "[d12 a4 w184 f1]  38.2 MiB/s"),
        (20, busy, "[d12 a4 w184 f1]"),
        (12, busy, "[d12 a4 w1…"),
        (80, idle, "[done 0 · active 0 · waiting 0 · failed 0]  0 B/s"),
        (43, idle, "[done 0 · active 0 · waiting 0 · failed 0]"),
        (21, idle, "[d0 a0 w0 f0]  0 B/s"),
        (20, idle, "[d0 a0 w0 f0]"),
        // The ETA needs the remaining bytes; at zero speed it is unknown.
        (80, unknownRemaining, "[done 1 · active 2 · waiting 0 · failed 0]  1000 B/s"),
        (80, stalled, "[done 0 · active 1 · waiting 2 · failed 0]  0 B/s  ETA --"),
    ]

    @Test(arguments: summaryLines)
    func summaryLine(width: Int, summary: BoardSummary, line: String) {
        #expect(ProgressBoard(width: width).summaryLine(summary) == line)
    }

    @Test func noActiveDownloadsIsTheSummaryAlone() {
        #expect(ProgressBoard(width: 80).lines(active: [], summary: Self.idle) == ["[done 0 · active 0 · waiting 0 · failed 0]  0 B/s"])
    }

    @Test func linesAreTheDownloadsInOrderThenTheSummary() {
        let lines = ProgressBoard(width: 60).lines(active: [F.stream, F.stalled], summary: Self.stalled)
        #expect(
            lines == [
                "stream.log  1.43 MiB  195 KiB/s",
                "stalled.zip  50.0%  512 KiB / 1.00 MiB  0 B/s  ETA --",
                "[done 0 · active 1 · waiting 2 · failed 0]  0 B/s  ETA --",
            ])
    }

    @Test func moreDownloadsThanLinesCollapseIntoOne() {
        let active = (1...5).map { F.download("f\($0).bin", total: 100, done: 50, speed: 10) }
        let lines = ProgressBoard(width: 60, maxDownloadLines: 3).lines(active: active, summary: Self.idle)
        #expect(
            lines == [
                "f1.bin  50.0%  50 B / 100 B  10 B/s  ETA 5s",
                "f2.bin  50.0%  50 B / 100 B  10 B/s  ETA 5s",
                "f3.bin  50.0%  50 B / 100 B  10 B/s  ETA 5s",
                "… and 2 more active",
                "[done 0 · active 0 · waiting 0 · failed 0]  0 B/s",
            ])
        // Exactly the cap: no extra line.
        #expect(ProgressBoard(width: 60, maxDownloadLines: 5).lines(active: active, summary: Self.idle).count == 6)
    }

    @Test(arguments: [(24, 10), (13, 10), (12, 9), (5, 2), (4, 1), (2, 1), (0, 1)])
    func theRegionFitsTheTerminalHeight(height: Int, downloadLines: Int) {
        #expect(ProgressBoard(width: 80, height: height).maxDownloadLines == downloadLines)
    }

    @Test func controlCharactersInANameCannotReachTheTerminal() {
        let evil = F.download("evil\u{1B}[2J\rname.txt", total: 10, done: 5, speed: 1)
        #expect(ProgressBoard(width: 80).downloadLine(evil) == "evil?[2J?name.txt  50.0%  5 B / 10 B  1 B/s  ETA 5s")
        #expect(ProgressBoard.plainLine(for: evil) == "evil?[2J?name.txt  50.0%  5 B / 10 B  1 B/s  ETA 5s")
    }

    @Test func plainLinesAreNeverCut() {
        #expect(ProgressBoard.plainLine(for: F.long) == ProgressBoardTests.downloadLines[3].line)
        #expect(ProgressBoard.plainLine(for: F.stream) == "stream.log  1.43 MiB  195 KiB/s")
    }

    /// Every width from 2 to 200, every fixture: no line is wider than `width - 1`.
    @Test func everyLineFitsEveryWidth() {
        let all = [F.iso, F.stream, F.stalled, F.long, F.wide, F.noName]
        for width in 2...200 {
            let lines = ProgressBoard(width: width, maxDownloadLines: 3).lines(active: all, summary: Self.busy)
            for line in lines {
                #expect(DisplayWidth.of(line) <= width - 1, "width \(width): \(line)")
            }
        }
    }
}

@Suite("ProgressBoard: a single download")
struct ProgressBoardSingleTests {
    @Test func oneDownloadAloneHasNoSummaryLine() {
        let download = Download(
            id: Download.ID("one"), url: "http://h/one.bin", destination: "/tmp/one.bin", state: .active, totalBytes: 100,
            completedBytes: 50, bytesPerSecond: 10
        )
        let alone = BoardSummary(done: 0, active: 1, waiting: 0, failed: 0, bytesPerSecond: 10, remainingBytes: 50)
        #expect(ProgressBoard(width: 80).lines(active: [download], summary: alone) == ["one.bin  50.0%  50 B / 100 B  10 B/s  ETA 5s"])
        var more = alone
        more.waiting = 1
        #expect(ProgressBoard(width: 80).lines(active: [download], summary: more).count == 2)
    }
}

@Suite("ProgressBoard: connections")
struct ProgressBoardConnectionsTests {
    @Test func aSplitDownloadShowsItsLiveConnections() {
        let download = Download(
            id: Download.ID("x"), url: "http://h/x.iso", destination: "/tmp/x.iso", state: .active, totalBytes: 100,
            completedBytes: 50, bytesPerSecond: 10, connections: 4
        )
        #expect(ProgressBoard(width: 80).downloadLine(download) == "x.iso  50.0%  50 B / 100 B  10 B/s  ×4  ETA 5s")
        var single = download
        single.connections = 1
        #expect(ProgressBoard(width: 80).downloadLine(single) == "x.iso  50.0%  50 B / 100 B  10 B/s  ETA 5s")
    }

    @Test func aDownloadWaitingToRetryShowsWhichRetryAndWhy() {
        var retrying = Fixtures.stalled
        retrying.retry = Download.Retry(attempt: 2, maxRetries: 5, reason: "connection reset")
        #expect(ProgressBoard(width: 80).downloadLine(retrying) == "stalled.zip  50.0%  512 KiB / 1.00 MiB  retry 2/5  connection reset")
        var unknown = Fixtures.stream
        unknown.retry = Download.Retry(attempt: 1, maxRetries: 5, reason: "timed out")
        #expect(ProgressBoard(width: 80).downloadLine(unknown) == "stream.log  1.43 MiB  retry 1/5  timed out")
        // Too narrow for the reason: it goes, which retry stays.
        #expect(ProgressBoard(width: 50).downloadLine(retrying) == "stalled.zip  50.0%  512 KiB / 1.00 MiB  retry 2/5")
    }

    @Test func theSummaryCountsRetryingDownloadsOnlyWhenThereAreSome() {
        let summary = BoardSummary(done: 1, active: 2, waiting: 3, failed: 0, bytesPerSecond: 0, remainingBytes: nil, retrying: 1)
        #expect(ProgressBoard(width: 100).summaryLine(summary) == "[done 1 · active 2 · retrying 1 · waiting 3 · failed 0]  0 B/s")
        #expect(ProgressBoard(width: 30).summaryLine(summary) == "[d1 a2 r1 w3 f0]  0 B/s")
    }
}
