import CExecutorHook
import NIOCore
import NIOPosix

/// Runs Swift tasks on the HTTP client's event loops instead of the runtime's global thread pool.
///
/// AsyncHTTPClient delivers every response on one of SwiftNIO's event loops. With the default global
/// executor each delivery wakes a task on another thread, and on a two-core machine those threads and
/// the event loops take turns on the same cores. Installed, a task resumed by a response keeps running
/// on the loop that delivered it, and `.indifferent` requests then prefer a connection on that loop, so
/// a job's request, body and file writes stay on one thread. This is what SwiftNIO's
/// `NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()` does; its
/// `dlsym` lookup fails in a statically linked binary, so the hook's address comes from `CExecutorHook`.
///
/// The `fetchctl` binary installs it first thing in `main`. A program using FetchKit as a library may
/// too, as long as none of its tasks block a thread for long (they would stall that loop's sockets).
@available(macOS 14, *)
public enum EventLoopExecutor {
    private static let installed = LockedBox(false)

    /// Whether `installAsGlobalExecutor()` has installed the event loops in this process.
    public static var isInstalled: Bool { installed.withLock { $0 } }

    /// Makes `MultiThreadedEventLoopGroup.singleton` (the client's loops) Swift's global executor.
    /// Call it once, from the main thread, before any task starts; later calls do nothing.
    public static func installAsGlobalExecutor() {
        // The hook's type is the runtime's, checked for the same compilers as SwiftNIO's installer;
        // with a newer one tasks keep the runtime's own pool.
        #if compiler(<6.6)
        let first = installed.withLock { wasInstalled in
            defer { wasInstalled = true }
            return !wasInstalled
        }
        guard first else { return }
        // The runtime's hook type: the job, and the original enqueue function (not used).
        typealias EnqueueGlobalHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void
        let hook: EnqueueGlobalHook = { job, _ in
            // `any()` is the calling thread's loop when called on one, so a resumed task stays where it was woken.
            MultiThreadedEventLoopGroup.singleton.any().enqueue(ExecutorJob(job))
        }
        withUnsafeTemporaryAllocation(of: EnqueueGlobalHook.self, capacity: 1) { slot in
            slot.baseAddress!.initialize(to: hook)
            slot.baseAddress!.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 1) { pointer in
                fk_swift_task_enqueueGlobal_hook_address().pointee = pointer.pointee
            }
        }
        #endif
    }

    /// The next event loop in turn, as an actor a task can be isolated to (nil unless installed), so
    /// that tasks started together (the runner's workers) spread over the loops, and so do the
    /// connections their requests open there. Without it they would all stay on the loop their
    /// parent ran on.
    static func nextLoop() -> EventLoopIsolation? {
        guard isInstalled else { return nil }
        return EventLoopIsolation(MultiThreadedEventLoopGroup.singleton.next())
    }
}

/// One event loop as an actor: a task isolated to it runs on that loop, and so does every nonisolated
/// async function it calls (they run on their caller's executor, see Package.swift).
///
/// Installed as the global executor, the loops run every task's job as isolated to themselves. A task
/// that is itself nonisolated must then switch executor each time it comes back from a call that
/// ran elsewhere (a continuation, `withTaskCancellationHandler`): a trip through the loop's queue,
/// eleven a job. Isolated to the loop it is already on, it has nothing to switch. A task resumed from
/// another thread (the state store's writer) comes back to this loop, not to whichever loop is next.
final actor EventLoopIsolation {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        loop.executor.asUnownedSerialExecutor()
    }
}

extension MultiThreadedEventLoopGroup {
    /// A loop other than the calling thread's (any loop when the caller is on none), for work that
    /// should not wait for what the caller's loop is busy with: `fetchctl run`'s network monitor
    /// and first connection, started while this loop loads the jobs file and opens the stores.
    func loopOtherThanCurrent() -> any EventLoop {
        for loop in makeIterator() where !loop.inEventLoop { return loop }
        return next()
    }
}
