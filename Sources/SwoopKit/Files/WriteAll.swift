#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writing every byte of a buffer to a file descriptor: the one loop for short writes and `EINTR`
/// (part files, the response cache, standard output).
package enum WriteAll {
    /// Writes all of `bytes` to `fd`, at `offset` with `pwrite` or at the file position with `write`.
    ///
    /// - Returns: `nil` when every byte was written, else the `errno` of the failure (`EIO` for a
    ///   write that wrote nothing).
    package static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int? = nil) -> Int32? {
        guard let base = bytes.baseAddress else { return nil }
        var done = 0
        while done < bytes.count {
            let n: Int
            if let offset {
                n = pwrite(fd, base + done, bytes.count - done, off_t(offset + done))
            } else {
                n = Glibc.write(fd, base + done, bytes.count - done)
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return n < 0 ? errno : EIO }
            done += n
        }
        return nil
    }
}
