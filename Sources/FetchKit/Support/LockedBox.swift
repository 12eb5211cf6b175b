import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A value behind a lock: the house type for small shared mutable state that an actor would make
/// needlessly asynchronous.
///
/// The value and its mutex live in one allocation of their own (a `ManagedBuffer`: the value as its
/// header, the mutex as its one element), rather than in an `NSLock` and a stored property:
/// `NSLock.lock()` is a class method call around `pthread_mutex_lock`, and every `inout` access to a
/// class's stored property is checked for exclusivity at run time. A job takes about seventy of
/// these locks (callgrind); without both costs each is a call and an atomic operation. One
/// allocation, not three (an object, the mutex and the value each on the heap): a job makes six of
/// these boxes (its file, its exchange, its stored body…), and each had cost three `malloc`s and
/// three `free`s.
///
/// The mutex is adaptive (`initializeAdaptiveMutex`): it spins briefly before sleeping.
///
/// A struct around the buffer: copies share the one value and lock.
///
/// The buffer is the standard library's `ManagedBuffer` itself, not a subclass of it: the Swift
/// runtime makes a generic subclass's metadata for each `Value` on first use, looking its superclass
/// up by its mangled name (about 15,000 instructions a type, some forty types a run, and one walk
/// of the binary's conformance records). The mutex needs no teardown: `pthread_mutex_destroy` frees
/// nothing on glibc or Darwin, and its bytes are plain data.
struct LockedBox<Value>: @unchecked Sendable {
    private let storage: ManagedBuffer<Value, pthread_mutex_t>

    init(_ value: Value) {
        storage = ManagedBuffer<Value, pthread_mutex_t>.create(minimumCapacity: 1) { _ in value }
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            initializeAdaptiveMutex(mutex)
        }
    }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try storage.withUnsafeMutablePointers { value, mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }
}
