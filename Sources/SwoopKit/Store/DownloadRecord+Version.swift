extension DownloadRecord {
    /// What tells a record changed by another process since it was read: its state, its file and
    /// its recorded bytes (every transfer's write changes one of them). A batch that re-queues
    /// records it read saves each only while its version is still the stored one
    /// (``DownloadStore/save(contentsOf:expecting:)``): two `swoop get` of one list at once, the
    /// second's stale copy of a download the first had meanwhile completed made it download the
    /// file again under another name.
    public struct Version: Sendable, Hashable {
        public var state: Download.State
        public var fileName: String?
        public var committedBytes: Int
    }

    /// This record's ``Version``.
    public var version: Version {
        Version(state: state, fileName: fileName, committedBytes: committedBytes)
    }

    /// Whether this record is `other` but for its ``updatedAt``: adding a download again changed
    /// nothing worth a write.
    func sameApartFromUpdate(_ other: DownloadRecord) -> Bool {
        var same = self
        same.updatedAt = other.updatedAt
        return same == other
    }
}
