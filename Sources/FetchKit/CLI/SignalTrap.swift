import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Turns SIGINT and SIGTERM into a callback, so a run can stop starting jobs, cancel those in flight,
/// flush its log and exit 130 or 143. A second signal ends the process at once.
public final class SignalTrap: Sendable {
    private let sources: LockedBox<[any DispatchSourceSignal]>
    private let received = LockedBox<Int32?>(nil)

    /// Installs the handlers; keep the trap alive for as long as they should apply.
    public init(_ onSignal: @escaping @Sendable (Int32) -> Void) {
        let received = self.received
        sources = LockedBox([SIGINT, SIGTERM].map { number in
            Glibc.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                let first = received.withLock { value -> Bool in
                    defer { if value == nil { value = number } }
                    return value == nil
                }
                if first { onSignal(number) } else { _exit(128 + number) }
            }
            source.resume()
            return source
        })
    }

    /// The first signal received, if any.
    public var receivedSignal: Int32? { received.withLock { $0 } }

    /// The exit status for the signal received: 130 for SIGINT, 143 for SIGTERM.
    public var exitStatus: ExitStatus? {
        switch receivedSignal {
        case SIGINT?: return .interrupted
        case SIGTERM?: return .terminated
        default: return nil
        }
    }

    deinit {
        sources.withLock { for source in $0 { source.cancel() } }
    }
}
