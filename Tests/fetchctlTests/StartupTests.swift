import Testing
import CMalloc
#if canImport(Glibc)
import Glibc
#endif

/// What `main` does before anything else (Sources/fetchctl/main.swift).
struct StartupTests {
    /// The binary's zero-initialized data is paged in by one `madvise(MADV_POPULATE_WRITE)`: on a
    /// kernel too old for it (before Linux 5.14) the call fails and each page faults in on its own
    /// as before, so this checks that CI's kernel still takes the faster path.
    @Test func theZeroInitializedDataIsPagedInAtOnce() {
        #if os(Linux)
        #expect(fk_prefault_zero_data() == 0)
        #endif
    }

    /// The initialized data (`.data`, found in the executable's section headers) is paged in the
    /// same way, and copied: afterwards every page of it is present and the process's own, no
    /// longer the file's (`/proc/self/pagemap`: bit 63 present, bit 61 a file's or shared page).
    /// Pages nothing had touched yet were absent before, so without the copy this fails.
    @Test func theInitializedDataIsPagedInAndCopiedAtOnce() throws {
        #if os(Linux)
        var start: UInt = 0
        var end: UInt = 0
        try #require(fk_initialized_data_range(&start, &end) == 0)
        #expect(end > start)
        #expect(fk_prefault_initialized_data() == 0)
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let fd = open("/proc/self/pagemap", O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        var entries = [UInt64](repeating: 0, count: Int((end - start) / page))
        let read = entries.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(start / page * 8)) }
        #expect(read == entries.count * 8)
        #expect(entries.allSatisfy { $0 >> 63 & 1 == 1 && $0 >> 61 & 1 == 0 })
        #endif
    }
}
