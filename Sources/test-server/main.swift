// FetchKit's test server as a process of its own, for tests that need it elsewhere than in the
// test process — `.ci/network-test.py` runs it in one network namespace and fetchctl in another:
//
//   test-server [HOST] [PORT]      (default 127.0.0.1 and a free port)
//
// Prints its base URL on the first line of stdout, then serves until SIGTERM or SIGINT.
import FetchKitTesting
import Foundation
#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments
let host = arguments.count > 1 ? arguments[1] : "127.0.0.1"
let port = arguments.count > 2 ? Int(arguments[2]) ?? 0 : 0
let server = try await TestServer.start(host: host, port: port)
FileHandle.standardOutput.write(Data((server.baseURL + "\n").utf8))
// Nothing to save on the way out: a signal ends the process at once.
signal(SIGTERM) { _ in _exit(0) }
signal(SIGINT) { _ in _exit(0) }
while true { try await Task.sleep(for: .seconds(3600)) }
