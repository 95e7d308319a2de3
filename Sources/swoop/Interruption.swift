import Dispatch
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// SIGINT and SIGTERM stop downloads cleanly: the first one runs the handler (which cancels the
/// work, so progress is saved); a second SIGINT exits at once. A second one within a quarter of a
/// second is the same Ctrl-C delivered twice (`timeout -s INT` signals the process and its group):
/// it is ignored.
final class Interruption: @unchecked Sendable {  // only lock-guarded state
    private let signal = NIOLockedValueBox<Int32?>(nil)
    /// When the first signal came.
    private let firstAt = NIOLockedValueBox<DispatchTime?>(nil)
    private let sources = NIOLockedValueBox<[any DispatchSourceSignal]>([])

    /// The signal that arrived, if any.
    var received: Int32? { signal.withLockedValue { $0 } }

    func onSignal(_ handler: @escaping @Sendable () -> Void) {
        let made = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            Glibc.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [signal, firstAt] in
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
                    if since >= 250_000_000 { _exit(130) }
                }
            }
            source.resume()
            return source
        }
        sources.withLockedValue { $0 = made }
    }

    func stop() {
        sources.withLockedValue { sources in
            for source in sources { source.cancel() }
            sources.removeAll()
        }
    }
}
