import ArgumentParser
import Foundation
import NIOCore
import NIOPosix

@main
struct SwoopCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swoop",
        abstract: "A resumable, crash-safe download manager.",
        discussion: """
            Run the same `swoop get` (or `swoop resume`) after Ctrl-C, a crash or a reboot and it continues where it stopped.
            Exit codes: \(ExitStatus.summary)
            """,
        version: "0.1.0",
        subcommands: [
            GetCommand.self, AddCommand.self, ResumeCommand.self, ListCommand.self, PauseCommand.self, RemoveCommand.self, LimitCommand.self,
            FetchCommand.self, DaemonCommand.self,
        ],
        // `swoop URL` is `swoop get URL`.
        defaultSubcommand: GetCommand.self
    )

    /// Runs the command; usage errors exit with 2 (as documented), not ArgumentParser's 64.
    static func main() async {
        let first = CommandLine.arguments.dropFirst().first
        if first == "daemon" {
            // The daemon's tasks run on NIO's event loops, the threads its sockets are served on:
            // an RPC call no longer hops to Swift's own pool and back (about 10% more calls a
            // second). Only before any task has run, so first thing here.
            NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        }
        if let mistyped = first, let guess = Self.guess(mistyped) {
            FileHandle.standardError.write(Data("swoop: error: unknown command '\(mistyped)'; did you mean '\(guess)'?\n".utf8))
            exit(withError: ExitCode(ExitStatus.usage))
        }
        if let first, Self.startsTransfers(first) {
            // NIO's threads start on the other core while this one parses the arguments (0.5 ms
            // sooner to the first request).
            Task.detached { _ = NIOSingletons.posixEventLoopGroup }
        }
        await execute()
    }

    /// Parses and runs the command, then exits from the thread it ended on: returning to `main`
    /// would hop to the main actor, whose queue on Linux is served by a thread started for it.
    nonisolated private static func execute() async -> Never {
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            exit(withError: nil)
        } catch {
            if exitCode(for: error) == .validationFailure {
                // One error style: `swoop: error: …`, then ArgumentParser's usage and help hint.
                let usage = fullMessage(for: error).split(separator: "\n", omittingEmptySubsequences: false)
                    .drop { !$0.hasPrefix("Usage:") }
                let text = (["swoop: error: " + message(for: error)] + usage.map(String.init)).joined(separator: "\n")
                FileHandle.standardError.write(Data((text.trimmingCharacters(in: .newlines) + "\n").utf8))
                exit(withError: ExitCode(ExitStatus.usage))
            }
            exit(withError: error)
        }
    }

    /// Whether a command line starting with `first` may download (`get`, `resume`, `fetch`, or
    /// `swoop URL`), and so needs NIO's event loops.
    static func startsTransfers(_ first: String) -> Bool {
        !["daemon", "add", "ls", "pause", "rm", "limit", "help", "--help", "-h", "--version"].contains(first)
    }

    /// The subcommand a first argument was probably meant to be: a word (no scheme, dot, slash or
    /// colon, so not a URL or a host) that is not a subcommand but one or two letters away from one.
    static func guess(_ word: String) -> String? {
        let names = configuration.subcommands.compactMap { $0.configuration.commandName } + ["help"]
        guard !word.hasPrefix("-"), !names.contains(word), !word.contains(where: { ".:/".contains($0) }) else { return nil }
        return names.first { $0 != "help" && distance(word, $0) <= 2 }
    }

    /// The edit distance (insertions, deletions, substitutions, transpositions of neighbours).
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var rows = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { rows[i][0] = i }
        for j in 0...b.count { rows[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
                }
            }
        }
        return rows[a.count][b.count]
    }
}
