// bench/cache.sh's "cost of one hit in a warm process": one Session with the SQLite response cache,
// one fresh 16 KiB response stored, then N requests answered from the cache into a DiscardSink, in
// one process, as hishel's and requests-cache's hit loops do. Prints microseconds per hit.
//
//   swift run -c release cache-hit [N] [SERVER_URL]
//
// Without SERVER_URL it starts FetchKit's test server on 127.0.0.1 (only the first request reaches it).
import FetchKit
import FetchKitTesting
import Foundation

let count = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 5000 : 5000
var server: TestServer?
let base: String
if CommandLine.arguments.count > 2 {
    base = CommandLine.arguments[2]
} else {
    server = try await TestServer.start()
    base = server!.baseURL + "/cache/bench?max_age=3600&size=16384&fixed=1"
}
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cache-hit-\(UUID().uuidString)").path
let cache = try SQLiteResponseCache(directory: directory)
let session = Session(cache: cache)
var options = RequestOptions()
options.cache = RequestCacheOptions()
let first = try await session.execute(base, options: options, sink: DiscardSink())
precondition(first.cache == .miss, "the first request must go to the server")
// A few hits to warm up the reader pool and the page cache.
for _ in 0..<100 { _ = try await session.execute(base, options: options, sink: DiscardSink()) }
let clock = ContinuousClock()
let start = clock.now
for _ in 0..<count {
    let response = try await session.execute(base, options: options, sink: DiscardSink())
    precondition(response.cache == .hit)
}
let elapsed = clock.now - start
let (seconds, attoseconds) = elapsed.components
let micros = (Double(seconds) * 1e6 + Double(attoseconds) / 1e12) / Double(count)
print(String(format: "%.1f", micros))
try await session.shutdown()
try await server?.shutdown()
try? FileManager.default.removeItem(atPath: directory)
