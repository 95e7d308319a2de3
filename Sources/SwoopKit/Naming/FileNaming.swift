import Foundation

/// Turns server-supplied names into safe local file names.
///
/// Everything a server says about a name is hostile until proven otherwise: a
/// `Content-Disposition` filename or a URL segment may carry path separators, `..`,
/// control characters, bidi overrides that disguise an extension (`a\u{202E}gpj.exe`
/// displays as `aexe.jpg`) or more bytes than a file system accepts. The functions here
/// only compute names; they never touch the disk.
public enum FileNaming: Sendable {
    /// The longest name, in UTF-8 bytes, that common file systems (ext4, APFS, btrfs) accept.
    static let maxNameBytes = 255

    /// The suffix of the file a download is written to until it completes.
    public static let partSuffix = ".swoop"

    /// The longest final name: short enough that appending ``partSuffix`` never needs
    /// truncation, so distinct final names always have distinct part files.
    static let maxFinalNameBytes = maxNameBytes - partSuffix.utf8.count

    /// The name used when neither the headers nor the URL suggest one.
    static let fallbackName = "index.html"

    /// Longer "extensions" are treated as part of the name, so that a dot inside a title
    /// does not decide where a collision counter goes or what truncation keeps.
    static let maxExtensionBytes = 20

    /// Compression suffixes that form one extension together with a preceding `.tar`.
    static let tarCompressions: Set<String> = [".gz", ".bz2", ".xz", ".zst"]

    /// Reduces an untrusted name to a single safe path component.
    ///
    /// The result is the base name only (everything up to the last `/` or `\` is dropped)
    /// without control characters (C0, DEL, C1), Unicode format characters (bidi
    /// overrides and isolates, U+200E/U+200F, U+061C, U+FEFF, U+00AD, tag characters and
    /// the rest of category Cf except U+200C/U+200D, which Persian, Indic scripts and
    /// emoji sequences need) and line or paragraph separators; leading whitespace and
    /// trailing whitespace and dots are trimmed. Hidden-file names such as `.bashrc` are
    /// kept. Names longer than 249 UTF-8 bytes are shortened without splitting a
    /// character, keeping a short extension; the 6 bytes left of the usual 255-byte limit
    /// are for ``partFileName(for:)``'s suffix.
    ///
    /// - Parameter raw: A file name from a header, a URL or a user.
    /// - Returns: A name that is non-empty, not `.` or `..`, at most 249 UTF-8 bytes and
    ///   free of `/`, `\` and NUL; or `nil` when nothing usable remains.
    public static func sanitize(_ raw: String) -> String? {
        isPlainASCIIName(raw) ? raw : sanitizeScalars(raw)
    }

    /// ``sanitize(_:)`` scalar by scalar, for any name.
    static func sanitizeScalars(_ raw: String) -> String? {
        let visible = raw.unicodeScalars.filter { !isForbidden($0) }
        let base = visible.split(omittingEmptySubsequences: false) { $0 == "/" || $0 == "\\" }.last ?? []
        let trimmed = trimmingTrailingDotsAndSpaces(base.drop { $0.properties.isWhitespace })
        let name = string(trimmed)
        guard isUsable(name) else { return nil }
        let fitted = compose(name, insert: "", append: "", limit: maxFinalNameBytes)
        return isUsable(fitted) ? fitted : nil
    }

    /// Picks the local name for a download.
    ///
    /// - Parameters:
    ///   - contentDisposition: The raw `Content-Disposition` header value, if the server sent one.
    ///   - url: The URL the body came from (after redirects).
    /// - Returns: The sanitized `Content-Disposition` filename if there is a usable one;
    ///   otherwise the sanitized, percent-decoded last path segment of `url` (query and
    ///   fragment ignored; a path that is empty or ends in `/` has no segment); otherwise
    ///   `index.html`. A percent-encoded `/` or `\` inside the segment is data, not
    ///   structure, and becomes `_`.
    public static func suggestedName(contentDisposition: String?, url: URL) -> String {
        if let header = contentDisposition,
            let filename = ContentDisposition(parsing: header)?.filename,
            let name = sanitize(filename)
        {
            return name
        }
        if let segment = lastPathSegment(of: url), let name = sanitize(segment) {
            return name
        }
        return fallbackName
    }

    /// The name to try for the `attempt`-th collision with an existing file.
    ///
    /// The counter goes before the extension, and `.tar.gz`, `.tar.bz2`, `.tar.xz` and
    /// `.tar.zst` count as one extension: `file.tar.gz` becomes `file.1.tar.gz`, `notes`
    /// becomes `notes.1` and `.bashrc` becomes `.bashrc.1`. The stem is shortened when
    /// needed so the result stays within the 249 UTF-8 bytes ``sanitize(_:)`` allows.
    ///
    /// - Parameters:
    ///   - name: A sanitized file name.
    ///   - attempt: `0` for the name itself, then `1`, `2`, …; negative values count as `0`.
    /// - Returns: The candidate name.
    public static func candidate(_ name: String, attempt: Int) -> String {
        compose(name, insert: attempt > 0 ? ".\(attempt)" : "", append: "", limit: maxFinalNameBytes)
    }

    /// The name of the partial file that a download writes before it is complete.
    ///
    /// - Parameter finalName: The sanitized final name.
    /// - Returns: `finalName` followed by `.swoop`. Names from ``sanitize(_:)`` and
    ///   ``candidate(_:attempt:)`` always leave room for it; for a longer name, which would
    ///   exceed 255 UTF-8 bytes, the stem is shortened (the extension is kept) so the whole fits.
    public static func partFileName(for finalName: String) -> String {
        compose(finalName, insert: "", append: partSuffix, limit: maxNameBytes)
    }

    // MARK: - Pieces

    /// Whether `scalar` is dropped from names: controls, format characters, line breaks.
    static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F:
            return true
        case 0x200C, 0x200D:
            // Zero-width (non-)joiners are letters' business in Persian and Indic scripts
            // and glue emoji sequences together; they cannot reorder or hide text.
            return false
        default:
            switch scalar.properties.generalCategory {
            case .format, .lineSeparator, .paragraphSeparator: return true
            default: return false
            }
        }
    }

    /// `name` split before its extension; the extension keeps its dot and may be empty.
    ///
    /// A leading dot does not start an extension (`.bashrc` has none), an "extension"
    /// longer than ``maxExtensionBytes`` or containing whitespace is not one, and a
    /// compression suffix after `.tar` joins it.
    static func splitExtension(_ name: String) -> (stem: String, ext: String) {
        let scalars = Array(name.unicodeScalars)
        guard let dot = scalars.lastIndex(of: "."), dot > 0, dot < scalars.count - 1 else {
            return (name, "")
        }
        var start = dot
        let tar = dot - 4
        if tar > 0, tarCompressions.contains(string(scalars[dot...]).lowercased()),
            string(scalars[tar..<dot]).lowercased() == ".tar"
        {
            start = tar
        }
        let ext = scalars[start...]
        guard string(ext).utf8.count <= maxExtensionBytes, !ext.contains(where: \.properties.isWhitespace)
        else { return (name, "") }
        return (string(scalars[..<start]), string(ext))
    }

    /// `stem + insert + ext + append` for `name` split at its extension, with the stem
    /// shortened so the whole is at most `limit` UTF-8 bytes.
    static func compose(_ name: String, insert: String, append: String, limit: Int) -> String {
        // Nothing goes between stem and extension and the whole fits: no need to find them.
        if insert.isEmpty, name.utf8.count + append.utf8.count <= limit { return name + append }
        let (stem, ext) = splitExtension(name)
        let budget = limit - insert.utf8.count - ext.utf8.count - append.utf8.count
        guard stem.utf8.count > budget else { return stem + insert + ext + append }
        let cut = prefix(stem, maxBytes: max(budget, 1))
        let tidy = string(trimmingTrailingDotsAndSpaces(cut.unicodeScalars[...]))
        return (tidy.isEmpty ? cut : tidy) + insert + ext + append
    }

    /// The longest prefix of `text` within `maxBytes` UTF-8 bytes that ends on a character
    /// boundary, or on a scalar boundary when even the first character is too long.
    static func prefix(_ text: String, maxBytes: Int) -> String {
        var used = 0
        var kept = ""
        for character in text {
            let size = character.utf8.count
            guard used + size <= maxBytes else { break }
            used += size
            kept.append(character)
        }
        guard kept.isEmpty else { return kept }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard used + scalar.utf8.count <= maxBytes else { break }
            used += scalar.utf8.count
            scalars.append(scalar)
        }
        return String(scalars)
    }

    /// The percent-decoded last segment of `url`'s path, with decoded separators made harmless.
    static func lastPathSegment(of url: URL) -> String? {
        let path = url.path(percentEncoded: true)
        let segment = lastSegment(of: path)
        guard !segment.isEmpty else { return nil }
        // The common case: ASCII, nothing percent-encoded and no backslash: nothing to decode or replace.
        if segment.utf8.allSatisfy({ $0 < 0x80 && $0 != UInt8(ascii: "%") && $0 != UInt8(ascii: "\\") }) {
            return String(segment)
        }
        guard let bytes = ContentDisposition.percentDecodedBytes(segment, strict: false) else { return nil }
        // Old servers still send Latin-1 in URLs; bytes that are not UTF-8 are read as that.
        let decoded = ContentDisposition.decodeUTF8(bytes) ?? ContentDisposition.decodeLatin1(bytes)
        return String(
            String.UnicodeScalarView(decoded.unicodeScalars.map { $0 == "/" || $0 == "\\" ? "_" : $0 })
        )
    }

    /// What follows the path's last `/` (all of it without one). An ASCII path, as a
    /// percent-encoded one is, is cut at its last `/` byte: splitting it into Characters cost
    /// 14,000 instructions a URL. A `/` followed by a combining mark is one Character and no
    /// separator, so any other path is still cut Character by Character.
    static func lastSegment(of path: String) -> Substring {
        let bytes = path.utf8
        guard bytes.allSatisfy({ $0 < 0x80 }) else {
            return path.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        }
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return path[...] }
        return path[bytes.index(after: slash)...]
    }

    /// A name that sanitizing would return unchanged, told from its bytes alone (the common case,
    /// `file.bin`): printable ASCII without `/` or `\\`, no leading space, no trailing dot or space,
    /// not `.` or `..`, and short enough.
    private static func isPlainASCIIName(_ raw: String) -> Bool {
        let bytes = raw.utf8
        guard let first = bytes.first, let last = bytes.last, bytes.count <= maxFinalNameBytes,
            first != UInt8(ascii: " "), last != UInt8(ascii: "."), last != UInt8(ascii: " ")
        else { return false }
        return bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "\\") }
    }

    private static func isUsable(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".."
    }

    private static func trimmingTrailingDotsAndSpaces(
        _ scalars: some BidirectionalCollection<Unicode.Scalar>
    ) -> [Unicode.Scalar] {
        var result = Array(scalars)
        while let last = result.last, last == "." || last.properties.isWhitespace {
            result.removeLast()
        }
        return result
    }

    private static func string(_ scalars: some Sequence<Unicode.Scalar>) -> String {
        String(String.UnicodeScalarView(scalars))
    }
}
