#if canImport(Glibc)
import Glibc
#endif

/// Initializes `mutex` as glibc's adaptive mutex, which spins a little before it sleeps.
///
/// The run's shared state (the job queue, the connection pool, the response cache's and the state
/// store's bookkeeping) is taken by both event loops and the stores' writers for a few hundred
/// nanoseconds at a time. With the default mutex a thread that finds it taken sleeps in the kernel
/// at once and the holder then wakes it: a 2,000-job run made about 400 of these `futex` round
/// trips (perf: the cache's `commit`, `entries` and `didServe`, the pool's `lease` and `release`, the
/// queue's `next` and `finish`), each a system call and a context switch. Spinning first, the
/// waiter mostly gets the lock while the holder, on the other core, finishes.
func initializeAdaptiveMutex(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) {
    var attributes = pthread_mutexattr_t()
    pthread_mutexattr_init(&attributes)
    pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
    pthread_mutex_init(mutex, &attributes)
    pthread_mutexattr_destroy(&attributes)
}

/// A lock around state kept in the class that owns it (`JobQueue`, `ConnectionPool`), where a
/// `LockedBox` would split that state from its methods: an adaptive mutex
/// (`initializeAdaptiveMutex`) in an allocation of its own, never moved.
final class AdaptiveLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        initializeAdaptiveMutex(mutex)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
