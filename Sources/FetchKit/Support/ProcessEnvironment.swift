#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's environment variables, read from `environ` as they are now.
///
/// What `ProcessInfo.processInfo.environment` returns, for a fraction of its cost: Foundation's
/// getter took about 380,000 instructions for 39 variables on Linux, and a `fetchctl run` read it
/// four times before its first request (1.5 of a one-job run's 26.3 million instructions). Read
/// afresh at each call, as Foundation's is, so a variable set with `setenv` is seen.
public enum ProcessEnvironment {
    /// Every `NAME=value` entry; an entry without `=` is left out, and of two entries with one
    /// name the first is kept (as `getenv` finds it).
    public static func variables() -> [String: String] {
        var result: [String: String] = [:]
        // `environ` is non-optional on Linux and optional on Darwin.
        guard var entry = Optional(environ) ?? nil else { return result }
        while let pointer = entry.pointee {
            if let equals = strchr(pointer, Int32(UInt8(ascii: "="))) {
                let nameLength = pointer.distance(to: equals)
                let name = String(decoding: UnsafeRawBufferPointer(start: pointer, count: nameLength), as: UTF8.self)
                if result[name] == nil { result[name] = String(cString: equals + 1) }
            }
            entry += 1
        }
        return result
    }
}
