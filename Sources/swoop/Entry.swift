#if canImport(Glibc)
import Glibc
#endif

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
        if !daemon { Interruption.blockAsynchronousSignals() }
        SwoopCommand.start()
        if !daemon { Interruption.serveSignals() }
        Interruption.blockAsynchronousSignals()
        while true { pause() }
    }
}
