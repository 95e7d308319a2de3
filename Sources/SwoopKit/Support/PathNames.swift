/// Joining and splitting the absolute paths Swoop makes (a download's directory, made absolute and
/// standardized when it is asked for, and a file name with no `/`), without a trip through
/// `NSString`: these run several times for each of thousands of small files. They agree with
/// `NSString`'s `appendingPathComponent` and `deletingLastPathComponent` on such paths.
public enum PathNames {
    /// `name` in `directory`.
    public static func join(_ directory: String, _ name: String) -> String {
        if directory.isEmpty { return name }
        return directory.utf8.last == UInt8(ascii: "/") ? directory + name : directory + "/" + name
    }

    /// The directory `path` is in: `/a` for `/a/b`, `/` for `/a`, `""` for a bare name.
    public static func parent(of path: String) -> String {
        var path = Substring(path)
        while path.count > 1, path.utf8.last == UInt8(ascii: "/") { path = path.dropLast() }
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        if slash == path.startIndex { return "/" }
        var end = slash
        // `/a//b` is in `/a`.
        while end > path.startIndex, path.utf8[path.utf8.index(before: end)] == UInt8(ascii: "/") {
            end = path.utf8.index(before: end)
        }
        return end == path.startIndex ? "/" : String(path[..<end])
    }
}
