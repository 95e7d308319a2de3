import Foundation
import Testing

/// `scripts/test` (the README's test command, which `.ci/run` runs) runs the suites that are skipped
/// in its first phase (`TestPhase.runsHeavy`) by name in its second: a heavy suite missing from
/// that list would never run in CI.
@Suite("scripts/test's second phase names every heavy suite")
struct HeavyPhaseTests {
    @Test func everySuiteSkippedInPhaseOneIsInPhaseTwosFilter() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = try String(contentsOf: root.appendingPathComponent("scripts/test"), encoding: .utf8)
        let line = try #require(script.split(separator: "\n").first { $0.hasPrefix("heavy='") })
        let listed = Set(line.dropFirst("heavy='".count).dropLast().split(separator: "|").map(String.init))
        var heavy: Set<String> = []
        let files = FileManager.default.enumerator(atPath: root.appendingPathComponent("Tests").path)?.compactMap { $0 as? String } ?? []
        for file in files where file.hasSuffix(".swift") {
            let lines = try String(contentsOf: root.appendingPathComponent("Tests/" + file), encoding: .utf8).split(separator: "\n")
            for (index, text) in lines.enumerated() where text.hasPrefix("@Suite(") && text.contains("TestPhase.runsHeavy") {
                let declaration = lines[(index + 1)...].first { $0.hasPrefix("struct ") }
                if let name = declaration?.dropFirst("struct ".count).prefix(while: { $0.isLetter || $0.isNumber }) { heavy.insert(String(name)) }
            }
        }
        #expect(heavy.count >= 7, "\(heavy)")
        #expect(heavy == listed, "heavy suites \(heavy.sorted()), .ci/run's second phase \(listed.sorted())")
    }
}
