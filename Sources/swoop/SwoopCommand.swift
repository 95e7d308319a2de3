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
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").data(using: .utf8) ?? Data()))
                exit(withError: ExitCode(ExitStatus.usage))
            }
            exit(withError: error)
        }
    }
}
