import SwoopKit

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
        CatalogueRules.index(moving: pos, from: try anchor(how), current: current, count: count)
    }

    /// `changePosition`'s `how`.
    ///
    /// - Throws: ``RPCError`` for anything but `POS_SET`, `POS_CUR` or `POS_END`.
    public static func anchor(_ how: String) throws -> QueueAnchor {
        switch how {
        case "POS_SET": return .start
        case "POS_CUR": return .current
        case "POS_END": return .end
        default: throw RPCError.method("how must be POS_SET, POS_CUR or POS_END (got '\(how)')")
        }
    }
}
