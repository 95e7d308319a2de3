extension DownloadRecord {
    /// Whether a process holds this download's lock, so is transferring it: a record left
    /// `active` by a process that died is not. Takes no lock (for readers such as `swoop ls`).
    ///
    /// - Parameter lockDirectory: Where the lock files live (``Configuration/lockDirectory``).
    public func isLocked(in lockDirectory: String) -> Bool {
        DownloadLock.isHeld(key, in: lockDirectory)
    }
}
