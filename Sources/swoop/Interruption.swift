import Dispatch
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// SIGINT and SIGTERM stop downloads cleanly: the first one runs the handler (which cancels the
/// work, so progress is saved); a second SIGINT exits at once. A second one within a quarter of a
/// second is the same Ctrl-C delivered twice (`timeout -s INT` signals the process and its group):
/// it is ignored.
///
/// The signals reach the handler through the main thread (``serveSignals()``), which waits for them
/// with every thread blocking them from the start (``blockHandledSignals()``): one that comes
/// before a handler is set, or after it is stopped, does what it does to any program (it ends the
/// process), and none is lost. (A `DispatchSource` needs the signal ignored, and ignoring a signal
/// drops one already pending: a Ctrl-C in the first milliseconds was lost and the download ran on.)
final class Interruption: @unchecked Sendable {  // only lock-guarded state
    private let signal = NIOLockedValueBox<Int32?>(nil)
    /// When the first signal came.
    private let firstAt = NIOLockedValueBox<DispatchTime?>(nil)
    /// Says why the process ends, before a second SIGINT ends it at once.
    private let beforeExit: @Sendable () -> Void

    /// - Parameter beforeExit: Called on a second SIGINT, just before the process exits: it
    ///   prints the line that says so (without it, the terminal showed the prompt with no word).
    init(beforeExit: @escaping @Sendable () -> Void = {}) {
        self.beforeExit = beforeExit
    }

    /// The signal that arrived, if any.
    var received: Int32? { signal.withLockedValue { $0 } }

    /// Makes `handler` this process's answer to SIGINT and SIGTERM, until ``stop()``.
    func onSignal(_ handler: @escaping @Sendable () -> Void) {
        let registration = Registration(owner: ObjectIdentifier(self)) { [self] number in receive(number, handler) }
        Self.current.withLockedValue { $0 = registration }
    }

    /// Gives the signals back their default action (ending the process).
    func stop() {
        Self.current.withLockedValue { current in
            if current?.owner == ObjectIdentifier(self) { current = nil }
        }
    }

    private func receive(_ number: Int32, _ handler: @Sendable () -> Void) {
        let first = signal.withLockedValue { value -> Bool in
            defer { if value == nil { value = number } }
            return value == nil
        }
        let now = DispatchTime.now()
        if first {
            firstAt.withLockedValue { $0 = now }
            handler()
        } else if number == SIGINT {
            let since = firstAt.withLockedValue { $0 }.map { now.uptimeNanoseconds - $0.uptimeNanoseconds } ?? .max
            if since >= 250_000_000 {
                beforeExit()
                _exit(130)
            }
        }
    }

    // MARK: The process's side, run by the main thread (`Entry`)

    private struct Registration: Sendable {
        let owner: ObjectIdentifier
        let handle: @Sendable (Int32) -> Void
    }

    /// The handler set now, if any.
    private static let current = NIOLockedValueBox<Registration?>(nil)

    /// The signals ``serveSignals()`` hands to a handler.
    static let handled: [Int32] = [SIGINT, SIGTERM]

    /// Those of ``handled`` this process was started ignoring (a non-interactive shell starts a
    /// background job ignoring SIGINT, so that a Ctrl-C meant for the script spares it): they stay
    /// ignored, handler or not, as a program that catches a signal leaves it ignored when it was.
    private static let startedIgnoring = NIOLockedValueBox<Set<Int32>>([])

    /// Blocks SIGINT and SIGTERM in the calling thread, and so in every thread it starts afterwards:
    /// they wait for ``serveSignals()``. The first thing `main` does, before any other thread exists.
    /// The other signals keep their default actions (SIGHUP and SIGQUIT end the process, Ctrl-Z
    /// stops it), taken by the main thread: dispatch's threads, and those they start, block them.
    static func blockHandledSignals() {
        let ignored = handled.filter { number in
            var action = sigaction()
            // SIG_IGN is the handler 1.
            return sigaction(number, nil, &action) == 0 && unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self) == 1
        }
        startedIgnoring.withLockedValue { $0 = Set(ignored) }
        // The mask is set, not added to: a parent may have started this process with signals
        // blocked (a spawn from a thread of dispatch's inherits all of them blocked).
        var signals = handledSet
        pthread_sigmask(SIG_SETMASK, &signals, nil)
    }

    /// ``handled`` as a signal set.
    private static var handledSet: sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        for number in handled { sigaddset(&signals, number) }
        return signals
    }

    /// Waits for SIGINT and SIGTERM for the rest of the process's life and hands each to the
    /// handler set then; with none set, ends the process by the signal, as its default action
    /// would have. A signal the process was started ignoring is dropped.
    static func serveSignals() -> Never {
        var waited = handledSet
        while true {
            let number = sigwaitinfo(&waited, nil)
            guard number > 0, !startedIgnoring.withLockedValue({ $0.contains(number) }) else { continue }  // EINTR, or ignored
            if let registration = current.withLockedValue({ $0 }) {
                registration.handle(number)
            } else {
                endProcess(by: number)
            }
        }
    }

    /// Ends the process by `number` with its default action: the parent sees it killed by it.
    private static func endProcess(by number: Int32) -> Never {
        Glibc.signal(number, SIG_DFL)
        var one = sigset_t()
        sigemptyset(&one)
        sigaddset(&one, number)
        pthread_sigmask(SIG_UNBLOCK, &one, nil)
        raise(number)
        _exit(128 + number)
    }
}
