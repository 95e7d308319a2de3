import AsyncHTTPClient

extension HTTPClientResponse.Body {
    /// Reads and drops a small body so that its connection can be reused; stops after 64 KiB (a
    /// larger body is dropped with its connection).
    func drain() async {
        var seen = 0
        do {
            for try await chunk in self {
                seen += chunk.readableBytes
                if seen > 1 << 16 { break }
            }
        } catch {}
    }
}
