/// ``InMemoryDownloadStore``'s records by id, with the two lookups a manager makes for every
/// download kept as indexes: by key (URL, directory and name asked for: is it known already?) and
/// by file (directory and file name: does an unfinished download name it?). A scan of every record
/// for each made adding and finishing thousands of downloads quadratic: 2,000 small files spent a
/// tenth of their CPU time copying records to compare names.
struct RecordTable {
    private var byID: [Download.ID: DownloadRecord] = [:]
    private var byKey: [DownloadKey: Set<Download.ID>] = [:]
    private var byFile: [FileKey: Set<Download.ID>] = [:]

    private struct FileKey: Hashable {
        var directory: String
        var fileName: String

        /// The file `record` names, if it names one yet.
        static func of(_ record: DownloadRecord) -> FileKey? {
            record.fileName.map { FileKey(directory: record.directory, fileName: $0) }
        }
    }

    var values: Dictionary<Download.ID, DownloadRecord>.Values { byID.values }

    /// The record with `id`; setting one (or `nil`) keeps the indexes in step.
    subscript(id: Download.ID) -> DownloadRecord? {
        get { byID[id] }
        set {
            let old = byID[id]
            byID[id] = newValue
            reindex(id, from: old, to: newValue)
        }
    }

    /// The record of the download asked for as `key`, if any.
    func record(for key: DownloadKey) -> DownloadRecord? {
        byKey[key]?.lazy.compactMap { byID[$0] }.first
    }

    /// An unfinished download (neither completed nor removed) whose file is `fileName` in `directory`.
    func unfinished(directory: String, fileName: String) -> DownloadRecord? {
        byFile[FileKey(directory: directory, fileName: fileName)]?.lazy
            .compactMap { byID[$0] }
            .first { $0.state != .completed && $0.state != .removed }
    }

    @discardableResult
    mutating func removeValue(forKey id: Download.ID) -> DownloadRecord? {
        let old = byID.removeValue(forKey: id)
        reindex(id, from: old, to: nil)
        return old
    }

    private mutating func reindex(_ id: Download.ID, from old: DownloadRecord?, to new: DownloadRecord?) {
        let (oldKey, newKey) = (old?.key, new?.key)
        if oldKey != newKey {
            if let oldKey { Self.remove(id, at: oldKey, from: &byKey) }
            if let newKey { byKey[newKey, default: []].insert(id) }
        }
        let (oldFile, newFile) = (old.flatMap(FileKey.of), new.flatMap(FileKey.of))
        if oldFile != newFile {
            if let oldFile { Self.remove(id, at: oldFile, from: &byFile) }
            if let newFile { byFile[newFile, default: []].insert(id) }
        }
    }

    private static func remove<Key: Hashable>(_ id: Download.ID, at key: Key, from index: inout [Key: Set<Download.ID>]) {
        index[key]?.remove(id)
        if index[key]?.isEmpty == true { index[key] = nil }
    }
}
