import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers

/// Ranges asked of the mirrors together with the probe, before the file's length is known: the
/// probe asks the URL for the first piece of `pieceSize` bytes, mirror `k` is asked for piece `k`.
/// When the probe's answer splits the file, each piece is the first segment of the connection that
/// uses its mirror, and its answer is checked as any segment's is (``SegmentedTransfer``); a piece
/// not taken (no split, a piece past the end, a mirror dropped) is cancelled and its answer dropped.
/// So the mirrors' links start with the URL's instead of one round trip and a save later.
final class EarlyRanges: Sendable {
    struct Piece: Sendable {
        let start: Int
        let response: Task<HTTPClientResponse, any Error>

        /// Cancels the request and drops its answer, if one came (its connection is not reused).
        func drop() {
            response.cancel()
            Task { if let answer = try? await response.value { await answer.body.drain() } }
        }
    }

    let pieceSize: Int
    /// How many mirrors were asked (pieces 1 to `asked`; the probe's is piece 0).
    let asked: Int
    /// The pieces not taken yet, by source index.
    private let pieces: NIOLockedValueBox<[Int: Piece]>

    /// Asks `mirrors[k - 1]` for piece `k` (bytes `k × pieceSize` up to the next piece) with `send`.
    init(mirrors: [URL], pieceSize: Int, send: @escaping @Sendable (URL, _ range: String) async throws -> HTTPClientResponse) {
        self.pieceSize = pieceSize
        self.asked = mirrors.count
        var pieces: [Int: Piece] = [:]
        for (offset, mirror) in mirrors.enumerated() {
            let source = offset + 1
            let start = source * pieceSize
            let range = "bytes=\(start)-\(start + pieceSize - 1)"
            pieces[source] = Piece(start: start, response: Task { try await send(mirror, range) })
        }
        self.pieces = NIOLockedValueBox(pieces)
    }

    /// The piece asked of `source`, handed over once: the caller reads or drops its answer.
    func take(source: Int) -> Piece? {
        pieces.withLockedValue { $0.removeValue(forKey: source) }
    }

    /// Cancels the pieces not taken and drops their answers (their connections are not reused).
    func discard() {
        let rest = pieces.withLockedValue { pieces in
            defer { pieces = [:] }
            return Array(pieces.values)
        }
        for piece in rest { piece.drop() }
    }

    deinit {
        discard()
    }
}
