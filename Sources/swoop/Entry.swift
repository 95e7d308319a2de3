#if canImport(Glibc)
import Glibc
#endif
import SwoopKit

/// The program's entry point. It starts ``SwoopCommand`` on Swift's thread pool, where the command
/// exits the process when it ends, and keeps the main thread for the signals.
///
/// Not an `async` main: on Linux, the runtime ends an async main with `dispatch_main()`, which
/// leaves the main thread with `pthread_exit`. That unwinds the main thread's stack, and the
/// unwinder's searches of the binary's `.eh_frame_hdr` and `.eh_frame` map about 0.7 MiB of them
/// (the kernel maps 64 KiB around each page fault): a sixth of the memory a 1 GiB `get` needs
/// besides the code.
@main
enum Entry {
    static func main() {
        // The daemon's signals are swift-service-lifecycle's (dispatch sources): its threads start
        // as before, and the main thread only sleeps.
        let daemon = CommandLine.arguments.dropFirst().first == "daemon"
        if !daemon { Interruption.blockHandledSignals() }
        // Every download holds files open: the soft limit (often 1024) up to the hard one.
        DescriptorLimit.raiseToHard()
        SwoopCommand.start()
        if !daemon { Interruption.serveSignals() }
        parkForTheDaemon()
    }

    /// Blocks what dispatch's `dispatch_main` blocked on the main thread (every signal but those a
    /// fault raises, and SIGPIPE and SIGPROF), so that SIGINT and SIGTERM stay pending for the
    /// daemon's dispatch sources, then sleeps until the process exits.
    static func parkForTheDaemon() -> Never {
        var signals = sigset_t()
        sigfillset(&signals)
        for synchronous in [SIGILL, SIGTRAP, SIGFPE, SIGBUS, SIGSEGV, SIGSYS, SIGPIPE, SIGPROF] {
            sigdelset(&signals, synchronous)
        }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        while true { pause() }
    }
}
