import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A value behind a lock: the house type for small shared mutable state that an actor would make
/// needlessly asynchronous.
///
/// The mutex and the value live in memory of their own rather than in an `NSLock` and a stored
/// property: `NSLock.lock()` is a class method call around `pthread_mutex_lock`, and every `inout`
/// access to a class's stored property is checked for exclusivity at run time. A job takes about
/// seventy of these locks (callgrind); without both costs each is a call and an atomic operation.
final class LockedBox<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Guarded by `mutex`.
    private let value: UnsafeMutablePointer<Value>

    init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = .allocate(capacity: 1)
        self.value.initialize(to: value)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
