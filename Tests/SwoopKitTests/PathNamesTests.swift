import Foundation
import Testing

@testable import SwoopKit

@Suite("Path names: joined and split as NSString does, without it")
struct PathNamesTests {
    @Test(arguments: [
        ("/a", "b"), ("/a/", "b"), ("/", "b"), ("/a/b c", "ü.bin"), ("", "b"), ("/a", ".b.swoop"),
    ])
    func joinAgreesWithNSString(directory: String, name: String) {
        #expect(PathNames.join(directory, name) == (directory as NSString).appendingPathComponent(name))
    }

    @Test(arguments: ["/a/b", "/a", "/", "/a/b/", "/a//b", "//a", "/a/b c/ü.bin", "/a/b//"])
    func parentAgreesWithNSString(path: String) {
        #expect(PathNames.parent(of: path) == (path as NSString).deletingLastPathComponent)
    }

    /// (Foundation on Linux traps on this one.)
    @Test func aBareNameIsInNoDirectory() {
        #expect(PathNames.parent(of: "b") == "")
    }
}
