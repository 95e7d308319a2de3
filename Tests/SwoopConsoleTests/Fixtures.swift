import SwoopKit

/// Snapshots for the board tests.
enum Fixtures {
    static let mib = 1 << 20

    static func download(
        _ name: String?, total: Int?, done: Int, speed: Double, url: String = "https://example.com/file"
    ) -> Download {
        Download(
            id: Download.ID(name ?? url), url: url, destination: name.map { "/home/me/Downloads/" + $0 },
            state: .active, totalBytes: total, completedBytes: done, bytesPerSecond: speed
        )
    }

    /// 45.0% of 5.59 GiB at 40 MiB/s.
    static let iso = download("ubuntu-24.04.1-desktop-amd64.iso", total: 6_000_000_000, done: 2_700_000_000, speed: 40.0 * 1_048_576)
    /// No Content-Length.
    static let stream = download("stream.log", total: nil, done: 1_500_000, speed: 200_000)
    /// Half done, stalled.
    static let stalled = download("stalled.zip", total: mib, done: mib / 2, speed: 0)
    static let long = download(
        "a-very-long-file-name-that-goes-on-and-on-forever-and-ever.tar.gz", total: 10 * mib, done: mib, speed: Double(mib))
    /// 22 East Asian wide characters (44 columns) and `.mp4`.
    static let wide = download("日本語のファイル名がとても長い場合のテストです.mp4", total: 100 * mib, done: 25 * mib, speed: 5.0 * 1_048_576)
    /// No destination yet: the name the URL suggests stands in (its query left out, decoded).
    static let noName = download(nil, total: 2048, done: 1024, speed: 1024, url: "https://example.com/files/big%20file.iso?X-Signature=abc123")
}
