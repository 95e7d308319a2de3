import ArgumentParser
import Foundation
import SwoopConsole
import SwoopKit

/// What to download and where: the URLs (or a list, or a Metalink file), names, directory,
/// checksum and collision policy. Shared by `get` (downloads them now) and `add` (queues them).
struct RequestOptions: ParsableArguments {
    @Argument(help: "http or https URLs to download.")
    var urls: [String] = []

    @Option(name: [.customShort("i"), .customLong("input-file")], help: ArgumentHelp("Read URLs from this file (- for stdin).", valueName: "file"))
    var inputFile: String?

    @Option(
        name: .customLong("mirror"),
        help: ArgumentHelp(
            "Another URL of the same file (repeatable): segments are spread over all, one connection per source unless -x says otherwise. A mirror must give the same length and ETag (the same length with --checksum), else it is dropped.",
            valueName: "url"
        )
    )
    var mirrors: [String] = []

    @Option(help: ArgumentHelp("Download the files of a Metalink (RFC 5854): their mirrors, names and hashes.", valueName: "file"))
    var metalink: String?

    @Option(name: [.customShort("o"), .customShort("O"), .customLong("output")], help: "Write to this file (one URL only; -O as in wget).")
    var output: String?

    @Option(
        name: [.customShort("d"), .customShort("P"), .customLong("dir")],
        help: "Directory to download into, made when missing (-P as in wget; default: the current one, or a daemon's own for `add`)."
    )
    var directory: String?

    @Flag(
        name: [.customShort("N"), .customLong("refresh")],
        help: "Ask the server whether a file downloaded before changed (as wget -N, curl -z); download it again if it did."
    )
    var refresh = false

    @Flag(help: "Replace an existing file of the same name.")
    var overwrite = false

    @Flag(help: "Fail if the file already exists (instead of picking name.1.ext).")
    var noClobber = false

    @Option(help: ArgumentHelp("Verify the finished file: sha-256=HEX, sha-1=HEX or md5=HEX.", valueName: "algo=hex"))
    var checksum: String?

    @Option(help: "Priority of these downloads in the queue (higher first).")
    var priority: Int = 0

    /// The error of an option the command does not know, on a line with no URL (`swoop --bogus`):
    /// ArgumentParser validates (no URL) before it reports what it did not recognise, so the line
    /// is parsed again with a URL added to find it.
    static func unknownOption() -> ValidationError? {
        guard let arguments = SwoopCommand.parsing, arguments.contains(where: { $0.hasPrefix("-") }) else { return nil }
        do {
            _ = try SwoopCommand.parseAsRoot(arguments + ["http://127.0.0.1/"])
        } catch {
            let message = SwoopCommand.message(for: error)
            return message.hasPrefix("Unknown option") ? ValidationError(message) : nil
        }
        return nil
    }

    func validate() throws {
        if urls.isEmpty && inputFile == nil && metalink == nil {
            // curl's -O takes no value: `swoop get -O URL` made the URL the output file's name.
            if let output, output.contains("://") {
                throw ValidationError("-o/-O takes a file name (as wget's -O), and took \(output); curl's -O is what Swoop does by default: `swoop get URL`")
            }
            if let unknown = Self.unknownOption() { throw unknown }
            throw ValidationError("give at least one URL, or -i FILE, or --metalink FILE")
        }
        if !mirrors.isEmpty && (urls.count != 1 || inputFile != nil || metalink != nil) {
            throw ValidationError("--mirror takes one URL (with -i, put a file's mirrors on its line, separated by TABs)")
        }
        if output != nil && (urls.count > 1 || inputFile != nil) { throw ValidationError("-o/--output takes one URL; use -d for several") }
        if checksum != nil && (urls.count > 1 || inputFile != nil) { throw ValidationError("--checksum takes one URL") }
        if overwrite && noClobber { throw ValidationError("--overwrite and --no-clobber contradict each other") }
        if metalink != nil && (output != nil || checksum != nil) { throw ValidationError("a Metalink names its files and hashes: no -o or --checksum with --metalink") }
        if refresh && noClobber { throw ValidationError("--refresh replaces a file that changed: not with --no-clobber") }
        if let output, let full = outputPath(base: DownloadRequest.absolute(directory ?? ".")) {
            // `-o DIR` (or `-o ~`) saved DIR.1 beside it: the directory's name was taken as the file's.
            var isDirectory: ObjCBool = false
            if output.hasSuffix("/") || (FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory) && isDirectory.boolValue) {
                throw ValidationError("-o/--output names a directory (\(output)): give a file name, or -d \(output) to save into it")
            }
        }
    }

    /// `-o`'s path made absolute (`~` expanded, a relative one in `base`, the `-d` directory), or
    /// `nil` without `-o`.
    func outputPath(base: String) -> String? {
        output.map { output in
            let path = (output as NSString).expandingTildeInPath
            return path.hasPrefix("/") ? path : PathNames.join(base, path)
        }
    }

    /// The requests, with their directory made; a line of a list that is not a download is
    /// reported (and its error returned, for the exit status).
    ///
    /// - Throws: `ExitCode` after printing an error that stops the command.
    /// - Parameter makeDirectory: Whether to make the directory here (a daemon makes its own).
    func prepared(transfer: TransferOptions, console: Console, makeDirectory: Bool = true) throws -> Prepared {
        let prepared: Prepared
        do {
            prepared = try self.requests(transfer: transfer, console: console)
            if makeDirectory { try FileSystem.createDirectories(DownloadRequest.absolute(directory ?? "."), what: "directory", mode: 0o777) }
        } catch let error as SwoopError {
            throw error.exit(on: console)
        }
        for error in prepared.badLines { console.error(error.userMessage) }
        return prepared
    }

    /// The requests a command line makes, and what went wrong with the lines of its list.
    struct Prepared {
        var requests: [DownloadRequest] = []
        /// The errors of the list's lines that could not be made into a request.
        var badLines: [SwoopError] = []
        /// Where in the list each request came from: an error of its download names the line, as a
        /// bad line's does.
        var origins = ListOrigins()
    }

    /// The requests, and the errors of the list's lines that could not be made into one.
    func requests(transfer: TransferOptions, console: Console) throws -> Prepared {
        let checksum = try checksum.map { try Checksum(parsing: $0) }
        let headers = try transfer.parsedHeaders()
        let settings = try transfer.settings()
        // Not given: a known download keeps its stored policy, a new one renames.
        let collisionPolicy: CollisionPolicy? = overwrite ? .overwrite : (noClobber ? .fail : nil)
        // Each entry with its checksum: --checksum's for the command line's one URL, a Metalink
        // file's strongest hash for each of its files.
        var entries = urls.map { (entry: URLList.Entry(url: $0, fileName: nil, line: 0, mirrors: mirrors), checksum: checksum) }
        if let inputFile { entries += try Self.readList(inputFile).map { ($0, nil) } }
        if let metalink {
            entries += try Self.readMetalink(metalink).map { file in
                (URLList.Entry(url: file.urls[0], fileName: file.name, line: 0, mirrors: Array(file.urls.dropFirst())), file.checksum)
            }
        }
        // Resolved once (the current directory and its symlinks), not once per URL of a long list.
        let base = DownloadRequest.absolute(self.directory ?? ".")
        var badLines: [SwoopError] = []
        // Sized once: a list of thousands of URLs is not copied as its array grows.
        var requests: [DownloadRequest] = []
        requests.reserveCapacity(entries.count)
        var origins = ListOrigins(list: inputFile ?? "-")
        origins.lines.reserveCapacity(entries.count)
        let outputPath = outputPath(base: base)
        for (entry, checksum) in entries {
            var directory = base
            var fileName = entry.fileName
            if let outputPath {
                // Not `NSString.deletingLastPathComponent`: Foundation traps on a bare name ("a", "a/").
                directory = PathNames.parent(of: outputPath)
                fileName = (outputPath as NSString).lastPathComponent
            }
            var request: DownloadRequest
            let url = Self.withScheme(entry.url, console: console)
            do {
                request = try DownloadRequest(url: url, directory: directory, fileName: fileName)
                request.mirrors = try entry.mirrors.map { try DownloadRequest.validate(Self.withScheme($0, console: console)) }
            } catch let error as SwoopError where entry.line > 0 {
                var message = error.message
                if error.code == .invalidURL, entry.mirrors.isEmpty, let name = entry.fileName, !entry.url.contains("://") {
                    // `not a url`: the first word is read as the URL and the rest as a file name,
                    // which "invalid URL: not" alone does not show.
                    message += " (the line \"\(entry.url) \(name)\" is read as a URL, then the file name to save it as)"
                }
                badLines.append(SwoopError(error.code, "\(inputFile ?? "-"):\(entry.line): \(message)"))
                continue
            }
            request.checksum = checksum
            request.headers = headers
            request.priority = priority
            request.collisionPolicy = collisionPolicy
            request.settings = settings
            if !request.mirrors.isEmpty, settings.maxConnections == nil {
                // Without -x, one connection per source (up to 16).
                request.settings.maxConnections = min(16, 1 + request.mirrors.count)
            }
            request.trustMirrorLength = transfer.trustMirrorLength
            request.refresh = refresh
            origins.lines.append(entry.line)
            requests.append(request)
        }
        return Prepared(requests: requests, badLines: badLines, origins: origins)
    }

    /// A URL written without a scheme (`example.com/a.iso`) is taken as http, as curl, wget and
    /// aria2 take it, with a notice.
    static func withScheme(_ text: String, console: Console) -> String {
        // The common case first: a URL with its scheme is taken as it is (looked for in the bytes:
        // `String.contains` cost 5,800 instructions a line of a long list).
        if hasSchemeSeparator(text) { return text }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        // Only what starts like a host name or address ("example.com/a", "127.0.0.1:8080/x",
        // "[::1]/x", "localhost:8080"): a dotted name, a bracketed address or localhost. A lone word
        // ("not" of a line `not a url`) is no host: it stays an invalid URL, reported as such.
        let host = trimmed.prefix { $0 != "/" && $0 != ":" && $0 != "?" && $0 != "#" }
        guard let first = trimmed.unicodeScalars.first, !hasSchemeSeparator(trimmed),
            first == "[" || (CharacterSet.alphanumerics.contains(first) && (host.contains(".") || host.lowercased() == "localhost"))
        else { return text }
        let url = "http://" + trimmed
        console.notice("no scheme in \(trimmed): using \(url)")
        return url
    }

    /// Whether `text` holds the bytes `://`. (Unlike a search by Characters, it also finds them
    /// before a combining mark; such a text is no URL either way, and is reported as one.)
    static func hasSchemeSeparator(_ text: String) -> Bool {
        var matched = 0
        for byte in text.utf8 {
            switch (matched, byte) {
            case (0, UInt8(ascii: ":")): matched = 1
            case (1, UInt8(ascii: "/")): matched = 2
            case (2, UInt8(ascii: "/")): return true
            case (_, UInt8(ascii: ":")): matched = 1
            default: matched = 0
            }
        }
        return false
    }

    private static func readMetalink(_ path: String) throws -> [Metalink.File] {
        return try Metalink.parse(readFile(path, what: "Metalink file"), source: path)
    }

    /// The contents of a file the user named (`~` expanded), or an error that says why not.
    private static func readFile(_ path: String, what: String) throws -> Data {
        let expanded = (path as NSString).expandingTildeInPath
        guard let contents = FileManager.default.contents(atPath: expanded) else {
            // Foundation does not say why: ask the system.
            let fd = open(expanded, O_RDONLY | O_CLOEXEC)
            var reason = fd < 0 ? String(cString: strerror(errno)) : "not a readable file"
            if fd >= 0 {
                var status = stat()
                if fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFDIR { reason = "it is a directory" }
                close(fd)
            }
            throw SwoopError(.fileSystem, "cannot read \(what) \(path): \(reason)")
        }
        return contents
    }

    private static func readList(_ path: String) throws -> [URLList.Entry] {
        let data: Data
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            data = try readFile(path, what: "input file")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            let place = URLList.firstNonUTF8(in: data).map { " (line \($0.line), byte \($0.column): 0x\(String($0.byte, radix: 16, uppercase: true)))" } ?? ""
            throw SwoopError(.invalidArgument, "input file \(path) is not UTF-8 text\(place); convert it, e.g. with `iconv -f latin1 -t utf-8`")
        }
        return URLList.parse(text)
    }
}
