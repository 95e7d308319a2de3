import Testing

@testable import SwoopKit

@Suite("Download ids: aria2-style GIDs, found by any unique prefix")
struct DownloadIDTests {
    @Test func aNewIDIsSixteenLowerCaseHexDigitsOfANonZeroValue() {
        let ids = (0..<10_000).map { _ in Download.ID.make().rawValue }
        #expect(Set(ids).count == 10_000)
        for id in ids {
            #expect(id.utf8.count == 16)
            #expect(id == id.lowercased())
            #expect(Download.ID.isGID(id))
        }
        #expect(Download.ID(gid: 0x2089b05ecca3d829).rawValue == "2089b05ecca3d829")
        #expect(Download.ID(gid: 1).rawValue == "0000000000000001")
    }

    @Test func onlySixteenHexDigitsNotAllZeroAreAGID() {
        #expect(Download.ID.isGID("2089B05ECCA3D829"))
        #expect(!Download.ID.isGID("0000000000000000"))
        #expect(!Download.ID.isGID("2089b05ecca3d82"))
        #expect(!Download.ID.isGID("2089b05ecca3d8290"))
        #expect(!Download.ID.isGID("+089b05ecca3d829"))
        #expect(!Download.ID.isGID("2089b05ecca3d82g"))
        #expect(!Download.ID.isGID("7c9e6679-7425-40de-944b-e07fc1f90ae7"))
    }

    @Test func anyUniquePrefixFindsItsDownload() throws {
        let ids = ["2089b05ecca3d829", "2089c00000000000", "ffffffffffffffff"].map(Download.ID.init)
        #expect(try Download.ID.resolve("2089b05ecca3d829", among: ids) == ids[0])
        #expect(try Download.ID.resolve("2089B", among: ids) == ids[0])
        #expect(try Download.ID.resolve("f", among: ids) == ids[2])
        #expect(try Download.ID.resolve("2089c", among: ids) == ids[1])
    }

    @Test func anAmbiguousUnknownOrMalformedIDSaysWhich() {
        let ids = ["2089b05ecca3d829", "2089c00000000000"].map(Download.ID.init)
        func failure(_ text: String) -> (SwoopError.Code, String)? {
            let error = #expect(throws: SwoopError.self) { try Download.ID.resolve(text, among: ids) }
            return error.map { ($0.code, $0.message) }
        }
        #expect(failure("2089")! == (.invalidArgument, "download id 2089 is ambiguous: it matches 2 downloads (2089b05ecca3d829, 2089c00000000000)"))
        #expect(failure("abc")! == (.notFound, "no download with id abc"))
        for bad in ["", "xyz", "2089b05ecca3d8290", "20-9"] {
            #expect(failure(bad)! == (.invalidArgument, "'\(bad)' is not a download id (16 hex digits, or a unique prefix of one)"))
        }
    }
}
