import AsyncHTTPClient
import Foundation
import NIOCore

// Opening a download: a completed one recognised, an unfinished one's part file reopened and
// trusted as far as the store and the file both vouch, a fresh one's name chosen and claimed.

extension Transfer {
    /// Whether ``open()`` writes nothing to the store and touches no file but a look at the
    /// directory (as claiming a name does on the event loop): a stored download waiting for its
    /// first start, with no file claimed and its settings unchanged. It then runs where the
    /// transfer runs, without a hop to a disk thread and back. Keep in step with ``open()``: a save
    /// added there for such a record must make this `false`.
    var opensWithoutSaving: Bool {
        !isNew && record.state == .waiting && record.fileName == nil && record.settings == options.settings
    }

    /// A completed record whose file is still as Swoop left it needs no work.
    func recogniseCompleted() throws -> Download? {
        guard record.state == .completed, let path = record.destinationPath else { return nil }
        if record.isCompletedFile(at: path) {
            if let partPath = record.partPath, FileSystem.isSameFile(partPath, path) { unlink(partPath) }
            return record.snapshot()
        }
        if (try? Self.finishInterruptedPublish(of: record, directorySyncs: context.directorySyncs)) == true {
            return record.snapshot()
        }
        if let partPath = record.partPath, let size = record.finalSize, FileSystem.sizeAndModified(partPath)?.size == size {
            // The completed bytes are in the part file, but it cannot be renamed as it is (its name
            // was taken meanwhile, or its mtime on disk predates the record after a power loss).
            // Continue from them: the server confirms them (416 under If-Range) before the rename.
            emit(.notice(record.snapshot(), "\(partPath) holds the completed download but was not renamed; checking it with the server"))
            record.state = try DownloadStateMachine.next(after: .completed, on: .invalidate).get()
            record.committedBytes = size
            record.syncedBytes = size
            record.bootID = bootID
            record.finalSize = nil
            record.finalModified = nil
            try storeCall { try store.update(record, durable: true) }
            return nil
        }
        let why = FileSystem.exists(path) ? "was changed since it was downloaded" : "was removed"
        emit(.notice(record.snapshot(), "\(path) \(why); downloading it again"))
        // A changed file is no longer ours: the collision policy decides about it like any file.
        record = record.restarted(bootID: bootID)
        try storeCall { try store.update(record, durable: true) }
        return nil
    }

    /// Running the same download again resumes it: a paused, interrupted or failed one goes back to waiting, and
    /// one left `active` by a process that died (the lock we hold proves it is gone) is recovered.
    func returnToQueue() throws {
        switch record.state {
        case .paused, .interrupted, .failed: try transition(.resume)
        case .active: try transition(.recover)
        case .removed:
            record = record.restarted(bootID: bootID)
        case .waiting, .completed: break
        }
    }

    /// Reopens an unfinished download's part file and trusts only what both the store and the file
    /// vouch for.
    func reopenPartFile() throws {
        guard let partPath = record.partPath, let finalPath = record.destinationPath else { return }
        if FileSystem.isSameFile(partPath, finalPath) {
            // The process died between the `link` that published the file and the `unlink` of its
            // part name: finish that step.
            unlink(partPath)
        }
        if !FileSystem.exists(partPath), let total = record.totalBytes, record.committedBytes == total,
            FileSystem.sizeAndModified(finalPath)?.size == total
        {
            // The process died between the rename and recording it (earlier Swoop renamed first):
            // the file is complete.
            offset = total
            try transition(.start)
            let stat = FileSystem.sizeAndModified(finalPath)
            return try recordCompleted(size: stat?.size ?? total, modified: stat?.modified)
        }
        if let segments = record.segments {
            return try reopenSegments(segments, partPath: partPath)
        }
        guard let file = try openOwnPartFile(partPath) else { return }
        let others = Self.isOthers(file, id: record.id)
        let trusted = others ? 0 : record.trustedBytes(fileSize: try file.size(), currentBootID: bootID)
        try file.truncate(to: trusted)
        try file.clearTag(emptied: others)
        file.assumeSynced(record.bootID == bootID ? min(record.syncedBytes, trusted) : trusted)
        part = file
        offset = trusted
        continuesEarlierRun = trusted > 0
        try checkpoint(force: true)
    }

    /// Opens the part file the record names (made if missing). One held by another download that
    /// made it for a name it has not claimed yet (a fresh small file's claim waits for its finish,
    /// its file tagged meanwhile: `claimFile`), or gone since that one let it go, is a retryable
    /// `inUse`: the store names the file this download's, so that one is refused at its finish and
    /// lets go, and ``openWaitingForUnclaimedWriters()`` waits for it.
    func openOwnPartFile(_ partPath: String) throws -> PartFile? {
        do {
            return try PartFile.open(partPath, exclusive: false)
        } catch let error as SwoopError where error.code == .inUse {
            let tag = PartFile.taggedDownload(path: partPath)
            guard !FileSystem.exists(partPath) || (tag != nil && tag != record.id.rawValue) else { throw error }
            throw SwoopError(.inUse, "\(partPath) is being written by another download that has not claimed it", isRetryable: true)
        }
    }

    /// Reopens a download split into segments. Its part file has holes, so its length says nothing:
    /// each segment's recorded progress is trusted in the same boot, its flushed progress after a
    /// reboot. Segments that do not add up to the file, or a missing part file, start it over.
    func reopenSegments(_ segments: [Segment], partPath: String) throws {
        let plan = record.totalBytes.map { SegmentPlan(total: $0, segments: segments) }
        guard let plan, plan.isConsistent, FileSystem.exists(partPath),
            let file = try openOwnPartFile(partPath)
        else {
            emit(.notice(snapshot(), "the saved segments of \(record.url) cannot be trusted; starting over"))
            if FileSystem.exists(partPath), let file = try? PartFile.open(partPath, exclusive: false) { part = file }
            return try resetToZero()
        }
        if Self.isOthers(file, id: record.id) {
            // Another download's unclaimed bytes where this one's file was: none of them is ours.
            part = file
            try resetToZero()
            return try file.clearTag(emptied: true)
        }
        try file.clearTag(emptied: false)
        let trusted = plan.trusted(sameBoot: record.bootID == bootID)
        part = file
        record.segments = trusted.segments
        offset = trusted.completedBytes
        continuesEarlierRun = offset > 0
        record.committedBytes = offset
        record.syncedBytes = trusted.syncedBytes
        try storeCall { try store.update(record, durable: true) }
    }

    /// Chooses the final name (server's, URL's or the user's), applies the collision policy, claims
    /// the part file with `O_EXCL` so no two downloads share one, and writes the record naming it
    /// (with what the caller set from the answer; not flushed: see `attempt()`).
    ///
    /// A name an unfinished download in the store will resume into belongs to it even without a
    /// part file: reusing it could splice two downloads. The store checks that as it writes the
    /// claim (``DownloadStore/claim(_:)``); a part file made for a name found taken is removed again.
    ///
    /// - Parameter deferring: A fresh download of at most ``deferredClaimLimit`` bytes: a part file
    ///   it creates is tagged with its id instead (``PartFile/tag(_:)``) and claimed in the store
    ///   with its first checkpoint, its stop or its finish (``claimPending``): thousands of small
    ///   files spend one store write each, in their finishing group's transaction. A run after a
    ///   crash takes its tagged part file back (``adoptLeftover(_:for:)``); bytes written before a
    ///   claim are never trusted, as none are recorded.
    func claimFile(response: HTTPClientResponse, deferring: Bool = false) throws {
        let base = requestedName
            ?? FileNaming.suggestedName(contentDisposition: response.headers.first(name: "Content-Disposition"), url: url)
        for attempt in 0..<10_000 {
            let name = FileNaming.candidate(base, attempt: attempt)
            let finalPath = PathNames.join(record.directory, name)
            let partPath = PathNames.join(record.directory, FileNaming.partFileName(for: name))
            if FileSystem.exists(finalPath) {
                switch options.collisionPolicy {
                case .overwrite: break
                case .fail: throw SwoopError(.destinationExists, "\(finalPath) already exists")
                case .rename: continue
                }
            }
            let created = try PartFile.open(partPath, exclusive: true)
            // An empty leftover is taken only if no record claims its name: asked first, so that its
            // own download never finds it locked by this one (a rare path; a new file is not asked).
            let leftover = created == nil ? try storeCall { try store.unfinished(directory: record.directory, fileName: name) } : nil
            let holder = leftover.flatMap { $0.id == record.id ? nil : $0 }
            let adopted = created == nil && holder == nil ? try adoptLeftover(partPath, name: name) : nil
            guard let file = created ?? adopted else {
                if options.collisionPolicy == .rename { continue }
                let owner = holder.map { " by the download of \($0.url)" } ?? ""
                throw SwoopError(.destinationExists, "\(finalPath) is in use\(owner) (\(partPath) exists); choose another name")
            }
            part = file
            record.fileName = name
            stampProgress(error: nil)
            if deferring, mayDeferClaim, created != nil, file.tag(record.id.rawValue) {
                // Still waiting in the store: an active mark due meanwhile shows it running.
                claimPending = true
                lastCheckpoint = .now
                checkpointedBytes = offset
                return
            }
            context.activeMarks.remove(record.id)
            let owner: DownloadRecord?
            do {
                owner = try storeCall { try store.claim(record) }
            } catch {
                release(file, removing: created != nil)
                throw error
            }
            guard let owner else {
                lastCheckpoint = .now
                checkpointedBytes = offset
                return
            }
            release(file, removing: created != nil)
            if options.collisionPolicy == .rename { continue }
            throw SwoopError(.destinationExists, "\(finalPath) is in use by the download of \(owner.url); choose another name")
        }
        throw SwoopError(.destinationExists, "no free file name for \(base) in \(record.directory)")
    }

    /// Lets go of a part file this transfer opened but does not keep, removing it when this
    /// transfer made it (never a leftover it only adopted).
    private func release(_ file: PartFile, removing: Bool) {
        if removing { unlink(file.path) }
        file.unlock()
        part = nil
        record.fileName = nil
    }

    /// A part file that exists unlocked and claimed by no record (`name`'s), and is empty or tagged
    /// (``PartFile/tag(_:)``), is what a process killed before recording its name leaves (bytes are
    /// written before the name is recorded only into a tagged file, see `claimFile`): taking it
    /// loses nothing, as no record vouches for its bytes (a tagged one is emptied, and that flushed,
    /// before its tag comes off). A file tagged for another download is taken only when that
    /// download is gone or done under another name (removed, or finished elsewhere): one that may
    /// come back for it keeps it. One with bytes and no tag, or locked by a live process, is left alone.
    func adoptLeftover(_ path: String, name: String) throws -> PartFile? {
        guard let file = try? PartFile.open(path, exclusive: false), let size = try? file.size() else { return nil }
        if size > 0 {
            guard let tag = file.taggedDownload, try tag == record.id.rawValue || Self.isAbandoned(by: storeCall { try store.record(id: .init(tag)) }, name: name),
                (try? file.truncate(to: 0)) != nil
            else {
                file.unlock()
                return nil
            }
        }
        try file.clearTag(emptied: size > 0)
        return file
    }

    /// Whether a part file named `name` and tagged for the download whose record is `owner` (none
    /// when it is gone) is litter: that download is gone, removed, or finished under another name.
    static func isAbandoned(by owner: DownloadRecord?, name: String) -> Bool {
        guard let owner else { return true }
        return owner.fileName != name && (owner.state == .removed || owner.state == .completed)
    }

    /// Whether `file` is tagged for another download (``PartFile/tag(_:)``): a fresh small file
    /// that took this name while this download's part file was gone, and was killed before its
    /// claim. Its bytes are never this download's, whatever the length says. The tag stays until
    /// they are cut (``PartFile/clearTag(emptied:)``).
    static func isOthers(_ file: PartFile, id: Download.ID) -> Bool {
        guard let tag = file.taggedDownload else { return false }
        return tag != id.rawValue
    }

    /// The largest download whose claim waits (``claimPending``): at most this much is fetched again
    /// after a crash, as a killed segmented download fetches again per connection.
    static let deferredClaimLimit = 1 << 20

    /// Writes the record (``DownloadStore/update(_:durable:)``); a claim still pending
    /// (``claimPending``) is made with it. A pending claim the store refuses (another unfinished
    /// download names the file) gives the name up: the part file is removed, the record saved
    /// without it, and a retryable error thrown (the next attempt claims another name at once).
    func writeRecord(durable: Bool) throws {
        guard claimPending else { return try storeCall { try store.update(record, durable: durable) } }
        if let owner = try storeCall({ try store.claim(record) }) {
            let error = giveUpPendingName(.nameTaken(record, by: owner))
            try storeCall { try store.update(record, durable: durable) }
            throw error
        }
        claimPending = false
        context.activeMarks.remove(record.id)
        // The claim is written without a flush.
        guard durable else { return }
        try storeCall { try store.update(record, durable: true) }
        // The store names the file now, for good: the tag has said all it had to.
        part?.untag()
    }

    /// A pending claim the store refused (`refusal`): the part file (made by this transfer) is
    /// removed and its bytes dropped; returns the retryable error that says so.
    func giveUpPendingName(_ refusal: SwoopError) -> SwoopError {
        dropPendingClaim()
        return SwoopError(.destinationExists, "\(refusal.message); choosing another name", isRetryable: true)
    }

    /// Lets a pending claim go without writing it: the part file (made by this transfer) is removed
    /// and its bytes dropped.
    func dropPendingClaim() {
        claimPending = false
        mayDeferClaim = false
        if let part { release(part, removing: true) }
        offset = 0
        stampProgress(error: nil)
    }
}
