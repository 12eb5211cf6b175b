import Foundation
import Testing
@testable import FetchKit

/// `ProcessEnvironment.variables()` stands in for `ProcessInfo.processInfo.environment` where a run
/// reads the environment (config interpolation, proxies, shards): it must read the same.
@Suite struct ProcessEnvironmentTests {
    /// Every variable, with its value whole (the test process's environment; no `setenv` here: the
    /// other suites run at the same time and read it).
    @Test func readsWhatFoundationReads() {
        let variables = ProcessEnvironment.variables()
        #expect(!variables.isEmpty)
        #expect(variables == ProcessInfo.processInfo.environment)
    }
}
