import Foundation

/// The directories a daemon may write into: its download directory (`-d`) and any given with
/// `--allow-dir`. A download's `dir` and `out` must lead inside one of them, after `..` and
/// symbolic links are followed: `dir=/root/.ssh` or `out=../../x` is refused.
public struct DownloadRoots: Sendable, Hashable {
    /// Where a download goes without a `dir`, and what a relative `dir` is relative to.
    public var defaultDirectory: String
    /// Every root, with its symbolic links resolved.
    public var roots: [String]

    /// - Parameters:
    ///   - defaultDirectory: An absolute directory.
    ///   - allowed: More absolute directories downloads may go into.
    public init(defaultDirectory: String, allowed: [String] = []) {
        self.defaultDirectory = Self.standardized(defaultDirectory)
        self.roots = ([defaultDirectory] + allowed).map { Self.resolved(Self.standardized($0)) }
    }

    /// The directory and file name for a download's `dir` and `out` options.
    ///
    /// - Throws: ``RPCError`` (code 1) naming the path when it leads outside every root.
    public func place(dir: String?, out: String?) throws -> (directory: String, fileName: String?) {
        for text in [dir, out].compactMap({ $0 }) where text.contains("\0") {
            throw RPCError.method("'\(text.replacingOccurrences(of: "\0", with: "\\0"))' is not a path")
        }
        var directory = dir.map { $0.hasPrefix("/") ? $0 : defaultDirectory + "/" + $0 } ?? defaultDirectory
        var fileName: String?
        if let out {
            let full = Self.standardized(directory + "/" + out)
            fileName = (full as NSString).lastPathComponent
            directory = (full as NSString).deletingLastPathComponent
        }
        directory = Self.standardized(directory)
        guard contains(directory: directory) else {
            let what = out.map { "out=\($0)" + (dir.map { " in dir=\($0)" } ?? "") } ?? "dir=\(dir ?? directory)"
            throw RPCError.method("\(what) is outside the download directories (\(roots.joined(separator: ", ")))")
        }
        return (directory, fileName)
    }

    /// Whether `directory`, with `..` and its symbolic links followed, is a root or lies inside one.
    public func contains(directory: String) -> Bool {
        let real = Self.resolved(Self.standardized(directory))
        return roots.contains { real == $0 || real.hasPrefix($0 == "/" ? "/" : $0 + "/") }
    }

    /// `path` absolute with `.`, `..` and repeated slashes removed (no file system access).
    static func standardized(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            switch part {
            case ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// `path` with the symbolic links of its longest existing prefix resolved (the rest does not
    /// exist yet, so it cannot be a link).
    static func resolved(_ path: String) -> String {
        var existing = path
        var rest: [String] = []
        while existing != "/" {
            if let real = realpath(existing, nil) {
                defer { free(real) }
                return standardized(([String(cString: real)] + rest.reversed()).joined(separator: "/"))
            }
            rest.append((existing as NSString).lastPathComponent)
            existing = (existing as NSString).deletingLastPathComponent
        }
        return path
    }
}
