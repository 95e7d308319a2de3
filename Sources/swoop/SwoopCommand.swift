import ArgumentParser
import Foundation

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
            GetCommand.self, ResumeCommand.self, ListCommand.self, PauseCommand.self, RemoveCommand.self, FetchCommand.self,
        ]
    )

    /// Runs the command; usage errors exit with 2 (as documented), not ArgumentParser's 64.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
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
}
