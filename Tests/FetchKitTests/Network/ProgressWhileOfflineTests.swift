import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// The progress line says when the run is waiting for the network, and stops saying it when the
/// network is back.
@Suite struct ProgressWhileOfflineTests {
    @Test func theProgressLineSaysWaitingForNetwork() throws {
        let path = try TemporaryDirectory.make(prefix: "fetchctl-tests") + "/progress.txt"
        let writer = try LogWriter(path: path)
        let display = ProgressDisplay(writer: writer)
        display.runDidStart(RunInfo(id: "r", jobs: 3, concurrency: 1))
        display.networkWasLost()
        display.networkWasRestored(after: .seconds(3))
        writer.flush()
        writer.close()
        let redraws = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\r\u{1B}[2K").filter { !$0.isEmpty }
        #expect(redraws.count >= 2)
        #expect(redraws[redraws.count - 2].hasSuffix(" · waiting for network"), "\(redraws)")
        #expect(!redraws[redraws.count - 1].contains("waiting for network"))
    }
}
