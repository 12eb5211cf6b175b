import Testing
import CMalloc

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
}
