import SwoopKit

/// Where the requests of an `-i` list came from: the list's name and each request's line, by the
/// request's index (0: not from the list, as the command line's URLs and a Metalink file's).
/// An error of a download from the list names its line, as an error of a line that is no download
/// does (`list.txt:37: …`).
struct ListOrigins {
    /// The list as the command line named it (`-` for standard input).
    var list = "-"
    /// Each request's line in the list, by the request's index; 0 for none.
    var lines: [Int] = []

    /// `list.txt:37: ` for the download `id` when it came from the list, else "".
    ///
    /// - Parameter ids: The ids the manager gave the requests, in their order (a URL listed twice
    ///   has one id: its first line is named).
    func prefixes(for ids: [Download.ID]) -> [Download.ID: String] {
        var prefixes: [Download.ID: String] = [:]
        for (id, line) in zip(ids, lines) where line > 0 && prefixes[id] == nil {
            prefixes[id] = "\(list):\(line): "
        }
        return prefixes
    }
}
