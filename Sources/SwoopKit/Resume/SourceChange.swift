import Foundation

/// A download moving to another URL for the same file: a re-signed link, another mirror, `swoop
/// resume --url`. Pure.
///
/// The saved bytes are offered to the new URL only when its answer can prove that it serves the
/// same file: a `206` under `If-Range` with the stored strong ETag, of the same length (checked by
/// ``ResumeDecision`` like any resume). Anything else is a start over in the same part file. A
/// Last-Modified date and a length can coincide between different files on different servers, so
/// without a strong ETag the bytes are kept only when the caller says to trust them.
public enum SourceChange {
    /// The record moved to `url` (and `requestedName`), with its progress kept when the new URL can
    /// prove it (or `trustLength`), else cleared (its file name kept, so the same part file is
    /// reused). Returns the reason it starts over, if it does.
    public static func move(
        _ record: inout DownloadRecord, to url: String, requestedName: String, trustLength: Bool
    ) -> String? {
        let from = record.url
        // Bytes moved twice before a proof still came from the first URL.
        let bytesFrom = record.movedFrom ?? from
        record.url = url
        record.requestedName = requestedName
        record.setLastError(nil)
        if !sameOrigin(from, url) {
            // Another origin (scheme, host, port): what was asked of the first (headers that may
            // carry its credentials, its mirrors) does not follow, not even from https to http of
            // the same host; the request for the new URL gives its own.
            record.headers = []
            record.mirrors = []
        }
        guard let reason = startOverReason(record, from: from, trustLength: trustLength) else {
            if record.strongETag != nil {
                // The strong ETag proves the file; another server's date for it may differ.
                record.lastModified = nil
            } else {
                // Kept on trust of the date: the old server's weak ETag says nothing of the new one's.
                record.etag = nil
            }
            // The new URL owes the proof (``SourceProof``) until its first answer gives it.
            record.movedFrom = record.committedBytes > 0 || record.segments != nil ? bytesFrom : nil
            return nil
        }
        record.movedFrom = nil
        record.committedBytes = 0
        record.syncedBytes = 0
        record.segments = nil
        record.totalBytes = nil
        record.etag = nil
        record.lastModified = nil
        return reason
    }

    private static func sameOrigin(_ a: String, _ b: String) -> Bool {
        guard let a = URL(string: a), let b = URL(string: b) else { return false }
        return RedirectTracker.sameOrigin(a, b)
    }

    /// Why the saved bytes of `record` cannot be offered to a new URL, or `nil` when they can.
    static func startOverReason(_ record: DownloadRecord, from: String, trustLength: Bool) -> String? {
        guard record.committedBytes > 0 || record.segments != nil else { return nil }
        if record.strongETag != nil { return nil }
        if trustLength, record.lastModified != nil, record.totalBytes != nil { return nil }
        let what = record.lastModified != nil && record.totalBytes != nil
            ? "only a Last-Modified date and a length, which another file can share (--trust-mirror-length keeps the bytes on them)"
            : "no ETag or Last-Modified to compare"
        return "\(from) gave \(what)"
    }
}
