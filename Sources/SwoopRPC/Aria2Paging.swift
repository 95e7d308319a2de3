/// aria2's list arithmetic. Pure.
public enum Aria2Paging {
    /// The indices `tellWaiting` and `tellStopped` return for a list of `count`: `[offset,
    /// offset + num)` for an offset of 0 or more; for a negative one, counted from the end
    /// (-1 is the last) and going backwards, newest first, as aria2 does.
    public static func indices(count: Int, offset: Int, num: Int) -> [Int] {
        guard num > 0 else { return [] }
        if offset >= 0 {
            guard offset < count else { return [] }
            return Array(offset..<min(count, offset + min(num, count)))
        }
        let start = count + offset
        guard start >= 0 else { return [] }
        return Array(stride(from: start, through: max(0, start - num + 1), by: -1))
    }

    /// Where `changePosition` puts a download now at `current` in a queue of `count`:
    /// `POS_SET` from the front, `POS_CUR` from where it is, `POS_END` from the end (0 is the
    /// last place); clamped to the queue, as aria2 does.
    ///
    /// - Throws: ``RPCError`` for any other `how`.
    public static func position(current: Int, count: Int, pos: Int, how: String) throws -> Int {
        let base: Int
        switch how {
        case "POS_SET": base = 0
        case "POS_CUR": base = current
        case "POS_END": base = count - 1
        default: throw RPCError.method("how must be POS_SET, POS_CUR or POS_END (got '\(how)')")
        }
        // Clamped first: any Int is a valid (if far) offset, and none may overflow.
        let offset = max(-count, min(count, pos))
        return max(0, min(count - 1, base + offset))
    }
}
