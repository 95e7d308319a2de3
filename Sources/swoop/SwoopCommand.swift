import ArgumentParser
import Foundation
import NIOCore
import NIOPosix

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
            FetchCommand.self, DaemonCommand.self, NodesCommand.self,
        ],
        // `swoop URL` is `swoop get URL`.
        defaultSubcommand: GetCommand.self
    )

    /// Parses the command line on the calling thread and starts the command on Swift's thread pool,
    /// where it exits the process when it ends (``Entry`` keeps the main thread for signals). Usage
    /// errors exit with 2 (as documented), not ArgumentParser's 64.
    static func start() {
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
        if first == "help", let unknown = Self.unknownHelpTopic(Array(CommandLine.arguments.dropFirst(2))) {
            // ArgumentParser would show the overview and exit 0, as if the command existed.
            let line = "swoop: error: no command '\(unknown)'; `swoop --help` lists them\n"
            FileHandle.standardError.write(Data(line.utf8))
            exit(withError: ExitCode(ExitStatus.usage))
        }
        if let first, Self.startsTransfers(first) {
            // Swift's thread pool and NIO's threads start on the other core while this one parses
            // the arguments (1.4 ms sooner to the first request).
            Task.detached { _ = NIOSingletons.posixEventLoopGroup }
        }
        // Parsed here, on the main thread, while Swift's pool starts its first thread (about a
        // millisecond).
        do {
            let command = try parse(Array(CommandLine.arguments.dropFirst()))
            Task.detached { await execute(command) }
        } catch {
            fail(error)
        }
    }

    /// Runs the command, then exits from the thread it ended on.
    nonisolated private static func execute(_ command: any ParsableCommand) async -> Never {
        do {
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                var command = command
                try command.run()
            }
            exit(withError: nil)
        } catch {
            fail(error)
        }
    }

    /// Exits for `error`: a usage error in one style (`swoop: error: …`, then ArgumentParser's usage
    /// and help hint) with status 2, anything else as ArgumentParser reports it.
    private static func fail(_ error: any Error) -> Never {
        if exitCode(for: error) == .validationFailure {
            var usage = fullMessage(for: error).split(separator: "\n", omittingEmptySubsequences: false)
                .drop { !$0.hasPrefix("Usage:") }.map(String.init)
            // A bare `swoop` gets no usage from ArgumentParser: at least say where help is.
            if usage.allSatisfy(\.isEmpty) { usage = ["  See 'swoop --help' for more information."] }
            let text = (["swoop: error: " + message(for: error)] + usage).joined(separator: "\n")
            FileHandle.standardError.write(Data((text.trimmingCharacters(in: .newlines) + "\n").utf8))
            exit(withError: ExitCode(ExitStatus.usage))
        }
        exit(withError: error)
    }

    /// The command line, parsed quickly when it can be, else by ArgumentParser's root parse.
    nonisolated private static func parse(_ arguments: [String]) throws -> sending any ParsableCommand {
        try $parsing.withValue(arguments) { try parseQuickly(arguments) ?? parseAsRoot(arguments) }
    }

    /// The arguments being parsed, for validation to see whether help was asked for beside them
    /// (`asksArgumentParserItself`).
    @TaskLocal static var parsing: [String]?

    /// The command line parsed by its subcommand alone (`get` when none is named: `swoop URL`), or
    /// nil when the root parse should handle it. ArgumentParser's root parse reflects over `get`'s
    /// options three times (to see whether the default subcommand or the matched one takes all
    /// remaining arguments): 1.3 ms of the 15 ms from `exec` to a first request. Help, `--version`
    /// and the other built-in flags, and mistakes, go to the root parse, whose messages and usage
    /// name `swoop`; a mistake that validation already reported (one line, its exit code) is thrown
    /// as it is.
    nonisolated static func parseQuickly(_ arguments: [String]) throws -> ParsableCommand? {
        guard let first = arguments.first, first != "help", !asksArgumentParserItself(arguments) else { return nil }
        let named = configuration.subcommands.first { $0._commandName == first || $0.configuration.aliases.contains(first) }
        let command = named ?? GetCommand.self
        do {
            let parsed = try command.parseAsRoot(named == nil ? arguments : Array(arguments.dropFirst()))
            return type(of: parsed) == command ? parsed : nil
        } catch {
            if message(for: error).isEmpty && exitCode(for: error) != .success { throw error }
            return nil
        }
    }

    /// Whether the arguments hold one of ArgumentParser's own flags (help, version, completion,
    /// help dump) before any `--`: ArgumentParser answers those itself, after validating the rest.
    static func asksArgumentParserItself(_ arguments: [String]) -> Bool {
        for argument in arguments {
            if argument == "--" { return false }
            if ["--version", "--experimental-dump-help"].contains(argument) || argument.hasPrefix("--help")
                || argument.hasPrefix("-help") || argument.hasPrefix("--generate-completion-script")
                || argument.hasPrefix("---")
            {
                return true
            }
            // -h alone or in a group of short flags (-qh).
            if argument.hasPrefix("-"), !argument.hasPrefix("--"), argument.dropFirst().contains("h") { return true }
        }
        return false
    }

    /// The first word after `help` that names no subcommand, or nil (`help`, `help get`).
    static func unknownHelpTopic(_ words: [String]) -> String? {
        guard let topic = words.first, !topic.hasPrefix("-") else { return nil }
        let names = configuration.subcommands.flatMap { [$0._commandName] + $0.configuration.aliases } + ["help"]
        return names.contains(topic) ? nil : topic
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
