import Foundation
import SwoopTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Signals as a user, a script or a supervisor sends them to the binary: none is lost, however
/// early it comes.
@Suite("Signals (the binary)", .timeLimit(.minutes(2)))
struct SignalTests: CLISuite {
    let cli: CLIWorkspace

    init() async throws {
        cli = try await CLIWorkspace("swoop-signals")
    }

    /// SIGINT or SIGTERM sent in the first milliseconds of a `get`, before its handler is set or
    /// as it is set, either ends the process by the signal (as it ends any program) or stops the
    /// download cleanly (130, 143). The synchronous `main` that blocks the signals from the start
    /// once lost 40% of those sent 8–12 ms in (the handler's `SIG_IGN` dropped one already
    /// pending) and the download ran on.
    @Test(arguments: [SIGINT, SIGTERM])
    func anEarlySignalIsNeverLost(signal: Int32) async throws {
        defer { stop() }
        _ = serve("/slow.bin", size: 4_000_000)
        server.setDefault("/slow.bin", .throttle(bytesPerSecond: 200_000))
        for delay in [0, 1, 2, 4, 6, 8, 10, 12, 16, 24, 40, 80] {
            try? FileManager.default.removeItem(atPath: state)
            let running = try start("get", ["-q", "-d", out, server.url("/slow.bin")])
            if delay > 0 { usleep(UInt32(delay * 1000)) }
            running.signal(signal)
            let result = await running.wait(timeout: .seconds(10))
            #expect([signal, 128 + signal].contains(result.status), "signal \(signal) after \(delay) ms: status \(result.status)")
        }
    }

    /// The signals Swoop does not handle keep their default actions: SIGHUP (the terminal closed)
    /// ends a running `get`, even when the parent started it with signals blocked (as this test's
    /// process does). Blocking every signal, as the first main thread of its own did, left a
    /// download running with no terminal. (SIGQUIT too, but a debug build's backtracer takes it.)
    @Test(arguments: [SIGHUP])
    func unhandledSignalsKeepTheirDefaultAction(signal: Int32) async throws {
        defer { stop() }
        _ = serve("/hup.bin", size: 4_000_000)
        server.setDefault("/hup.bin", .throttle(bytesPerSecond: 200_000))
        let running = try start("get", ["-q", "-d", out, server.url("/hup.bin")])
        #expect(await eventually { server.bodyBytesSent(to: "/hup.bin") > 0 })
        running.signal(signal)
        let result = await running.wait(timeout: .seconds(10))
        #expect(result.status == signal)
    }

    /// A `get` started ignoring SIGINT (a non-interactive shell's background job: `swoop get URL &`
    /// in a script, whose Ctrl-C is meant for the script) keeps ignoring it, as `fetch` and curl
    /// do; SIGTERM still stops it cleanly, progress saved. It once stopped on that SIGINT (130).
    @Test func aGetStartedIgnoringSIGINTKeepsIgnoringIt() async throws {
        defer { stop() }
        _ = serve("/bg.bin", size: 4_000_000)
        server.setDefault("/bg.bin", .throttle(bytesPerSecond: 200_000))
        // `trap '' INT` leaves SIGINT ignored across the exec, as the shell does for `&`.
        let running = try SwoopBinary.Running(
            ["-c", "trap '' INT; exec \"$0\" \"$@\"", SwoopBinary.path, "get", "-q", "-d", out, "--state-dir", state, server.url("/bg.bin")],
            directory: root, executable: "/bin/sh"
        )
        #expect(await eventually { server.bodyBytesSent(to: "/bg.bin") > 0 })
        running.signal(SIGINT)
        let before = server.bodyBytesSent(to: "/bg.bin")
        #expect(await eventually { server.bodyBytesSent(to: "/bg.bin") > before + 100_000 }, "the download goes on after SIGINT")
        #expect(running.process.isRunning)
        running.signal(SIGTERM)
        let result = await running.wait(timeout: .seconds(10))
        #expect(result.status == 143)
        #expect(FileManager.default.fileExists(atPath: out + "/bg.bin.swoop"))
    }

    /// With no handler set (`ls`, `rm`, `add` without a daemon), SIGINT ends the process as the
    /// default action would: the main thread waits for it, not a handler.
    @Test func aCommandWithoutAHandlerEndsBySIGINT() async throws {
        defer { stop() }
        _ = serve("/f.bin", size: 1000)
        // `fetch` of a body that never ends: it sets no handler of its own.
        server.setDefault("/f.bin", .throttle(bytesPerSecond: 10))
        let running = try SwoopBinary.Running(["fetch", server.url("/f.bin")], directory: root)
        #expect(await eventually { server.requests(to: "/f.bin").count == 1 })
        running.signal(SIGINT)
        let result = await running.wait(timeout: .seconds(10))
        #expect(result.status == SIGINT)
    }
}
