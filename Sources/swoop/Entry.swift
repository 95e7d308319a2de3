#if canImport(Glibc)
import Glibc
#endif

/// The program's entry point. It starts ``SwoopCommand`` and then parks the main thread for the
/// rest of the process's life: the command exits the process from the thread it ends on.
///
/// Not an `async` main: on Linux, the runtime ends an async main with `dispatch_main()`, which
/// leaves the main thread with `pthread_exit`. That unwinds the main thread's stack, and the
/// unwinder's searches of the binary's `.eh_frame_hdr` and `.eh_frame` map about 0.7 MiB of them
/// (the kernel maps 64 KiB around each page fault): a sixth of the memory a 1 GiB `get` needs
/// besides the code. Parked here, the main thread does what dispatch's would after that unwinding:
/// it blocks the asynchronous signals (SIGINT and SIGTERM reach the dispatch sources that
/// `Interruption` reads, through their signalfd) and sleeps.
@main
enum Entry {
    static func main() {
        SwoopCommand.start()
        parkMainThread()
    }

    /// Blocks every signal but those a fault raises on the thread that caused it (as dispatch's
    /// `_dispatch_sigmask` does for its threads), then sleeps until the process exits.
    static func parkMainThread() -> Never {
        var signals = sigset_t()
        sigfillset(&signals)
        for synchronous in [SIGILL, SIGTRAP, SIGFPE, SIGBUS, SIGSEGV, SIGSYS, SIGPIPE, SIGPROF] {
            sigdelset(&signals, synchronous)
        }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        while true { pause() }
    }
}
