import Testing

@testable import SwoopKit

/// What another source's `206` must show before the saved bytes are continued from it.
@Suite("SourceProof")
struct SourceProofTests {
    static let date = "Sun, 06 Nov 1994 08:49:37 GMT"
    static let saved = SavedRepresentation(offset: 400, totalBytes: 1000, etag: "\"e\"", lastModified: date)

    static func head(etag: String? = nil, lastModified: String? = nil, total: String = "1000") -> ResponseHead {
        ResponseHead(status: 206, etag: etag, lastModified: lastModified, contentLength: 600, contentRange: "bytes 400-999/\(total)")
    }

    /// Not contradicting the saved bytes is no proof: an answer showing no ETag does not prove one.
    @Test func aStrongETagMustBeShownNotJustNotContradicted() {
        let proof = SourceProof.strongETag
        #expect(proof.refusal(of: Self.head(etag: "\"e\""), saved: Self.saved) == nil)
        #expect(proof.refusal(of: Self.head(), saved: Self.saved) == "it shows no ETag (the saved bytes have \"e\")")
        #expect(proof.refusal(of: Self.head(etag: "\"f\""), saved: Self.saved) == "its ETag \"f\" is not the download's \"e\"")
        // A weak saved ETag proves nothing (RFC 9110 §13.1.5): no strong one to compare.
        var weak = Self.saved
        weak.etag = "W/\"e\""
        #expect(proof.refusal(of: Self.head(etag: "W/\"e\""), saved: weak) == "the saved bytes have no strong ETag to check it against")
    }

    @Test func aTrustedDateMustBeShown() {
        let proof = SourceProof.lastModified
        #expect(proof.refusal(of: Self.head(lastModified: Self.date), saved: Self.saved) == nil)
        #expect(proof.refusal(of: Self.head(etag: "\"e\""), saved: Self.saved) == "it shows no Last-Modified date (the saved bytes have \(Self.date))")
        #expect(proof.refusal(of: Self.head(lastModified: "Mon, 07 Nov 1994 08:49:37 GMT"), saved: Self.saved) != nil)
    }

    @Test(arguments: [SourceProof.strongETag, .lastModified, .length])
    func everyProofNeedsTheSavedLength(proof: SourceProof) {
        for total in ["2000", "*"] {
            let head = Self.head(etag: "\"e\"", lastModified: Self.date, total: total)
            #expect(proof.refusal(of: head, saved: Self.saved)?.hasPrefix("it serves another length") == true)
        }
        var unknown = Self.saved
        unknown.totalBytes = nil
        #expect(proof.refusal(of: Self.head(etag: "\"e\"", lastModified: Self.date), saved: unknown) != nil)
    }

    @Test func aChecksumMakesTheLengthEnough() {
        #expect(SourceProof.forMirror(verifiedByChecksum: true) == .length)
        #expect(SourceProof.forMirror(verifiedByChecksum: false) == .strongETag)
        #expect(SourceProof.length.refusal(of: Self.head(etag: "\"other\""), saved: Self.saved) == nil)
    }

    /// The source is asked (`If-Range`) only with what its proof compares: another server's date
    /// for the same file may differ, a mirror's ETag too when a checksum verifies.
    @Test func theRequestCarriesOnlyWhatTheProofCompares() {
        let asked = { (proof: SourceProof) in proof.asked(Self.saved) }
        #expect((asked(.strongETag).etag, asked(.strongETag).lastModified) == ("\"e\"", nil))
        #expect((asked(.lastModified).etag, asked(.lastModified).lastModified) == (nil, Self.date))
        #expect((asked(.length).etag, asked(.length).lastModified) == (nil, nil))
        #expect(SourceProof.allCases.allSatisfy { $0.asked(Self.saved).totalBytes == 1000 && $0.asked(Self.saved).offset == 400 })
        #expect(SourceProof.forMovedURL(strongETag: "\"e\"") == .strongETag)
        #expect(SourceProof.forMovedURL(strongETag: nil) == .lastModified)
    }
}
