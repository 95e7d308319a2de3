import ArgumentParser

@main
struct SwoopCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swoop",
        abstract: "A resumable, crash-safe download manager.",
        discussion: """
            Run the same `swoop get` again after Ctrl-C, a crash or a reboot and it continues where it stopped.
            Exit codes: \(ExitStatus.summary)
            """,
        version: "0.1.0",
        subcommands: [GetCommand.self]
    )
}
