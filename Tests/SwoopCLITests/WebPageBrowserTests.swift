import Foundation
import SwoopTesting
import Testing

/// The web page in headless Chromium (Selenium): its JavaScript unit tests
/// (`Tests/Web/run_js_tests.py`) and a user's session against the real daemon
/// (`Tests/Web/page_test.py`). In CI (`CI=true`) they must run: a missing Chromium, chromedriver
/// or Selenium fails them instead of skipping them.
@Suite("swoop daemon: the web page in Chromium", .timeLimit(.minutes(3)), .enabled(if: TestPhase.runsHeavy))
struct WebPageBrowserTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Web").path

    static var isAvailable: Bool {
        if ProcessInfo.processInfo.environment["CI"] == "true" { return true }
        let hasBrowser = ["/usr/bin/chromium", "/usr/bin/chromedriver"].allSatisfy(FileManager.default.isExecutableFile(atPath:))
        let hasSelenium = (try? Process.run(URL(fileURLWithPath: "/usr/bin/env"), arguments: ["python3", "-c", "import selenium"]))
            .map { $0.waitUntilExit(); return $0.terminationStatus == 0 } ?? false
        return hasBrowser && hasSelenium
    }

    /// Runs `script` in a scratch directory, with the test process's scratch directory as its
    /// `TMPDIR`, so the browser's profiles go with it. (That one, not a deeper one: Chromium puts its
    /// singleton's Unix socket there, and a socket's path has at most 107 bytes.)
    static func run(_ script: String, _ arguments: [String] = [], environment: [String: String] = [:]) async throws -> SwoopBinary.Result {
        let scratch = try makeTemporaryDirectory("swoop-browser")
        return try await SwoopBinary.run(
            ["python3", "\(directory)/\(script)"] + arguments, in: scratch, executable: "/usr/bin/env",
            timeout: .seconds(150), environment: environment.merging(["TMPDIR": TestScratch.root]) { mine, _ in mine }
        )
    }

    @Test(.enabled(if: isAvailable)) func theJavaScriptUnitTestsPass() async throws {
        let result = try await Self.run("run_js_tests.py")
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdoutLines.last?.hasPrefix("PASS: ") == true, "\(result.stdout)")
    }

    @Test(.enabled(if: isAvailable)) func aUserDrivesTheDaemonFromThePage() async throws {
        let result = try await Self.run("page_test.py", ["--swoop", SwoopBinary.path])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdoutLines.last == "PASS: the page in Chromium", "\(result.stdout)")
    }

    /// Two daemons of a fleet (issue 15): the first's page lists both nodes and drives downloads
    /// wherever they run (`Tests/Web/fleet_page_test.py`).
    @Test(.enabled(if: isAvailable)) func theFleetsPageListsItsNodesAndDrivesDownloadsWhereverTheyRun() async throws {
        let fleet = try await FleetCommandTests.Fleet()
        let result = try await Self.run("fleet_page_test.py", ["--swoop", SwoopBinary.path, "--store", fleet.url], environment: fleet.environment)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdoutLines.last == "PASS: the fleet's page in Chromium", "\(result.stdout)")
    }
}
