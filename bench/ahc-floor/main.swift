// The floor under fetchctl: AsyncHTTPClient alone, with nothing of fetchctl's around it. Fetches
// every URL of a list (one per line) at a fixed concurrency and writes each body to OUT_DIR/<n>.bin
// with plain write(2) calls. No retries, no validation, no log, no state: what remains is the cost of
// the HTTP stack and Swift concurrency, which no amount of work in FetchKit can go below.
// bench/compare.sh times it next to curl and fetchctl.
//
//   ahc-floor URL_LIST OUT_DIR CONCURRENCY
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments
guard arguments.count == 4, let concurrency = Int(arguments[3]), concurrency > 0 else {
    FileHandle.standardError.write(Data("usage: ahc-floor URL_LIST OUT_DIR CONCURRENCY\n".utf8))
    exit(64)
}
let urls = try String(contentsOfFile: arguments[1], encoding: .utf8).split(separator: "\n").map(String.init)
let outDirectory = arguments[2]
try FileManager.default.createDirectory(atPath: outDirectory, withIntermediateDirectories: true)

var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, decompression: .disabled)
configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = concurrency
configuration.tracing.tracer = nil  // as fetchctl's transport: no span per request
let client = HTTPClient(eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), configuration: configuration)

struct Failure: Error, CustomStringConvertible {
    var description: String
}

@Sendable func fetch(_ index: Int) async throws {
    let response = try await client.execute(HTTPClientRequest(url: urls[index]), timeout: .seconds(60))
    guard response.status == .ok else { throw Failure(description: "\(urls[index]): HTTP \(response.status.code)") }
    let path = "\(outDirectory)/\(index).bin"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw Failure(description: "cannot create \(path)") }
    defer { close(fd) }
    for try await chunk in response.body {
        try chunk.withUnsafeReadableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                guard written > 0 else { throw Failure(description: "cannot write \(path)") }
                offset += written
            }
        }
    }
}

var failure: Error?
do {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var next = 0
        while next < min(concurrency, urls.count) {
            let index = next
            group.addTask { try await fetch(index) }
            next += 1
        }
        while try await group.next() != nil, next < urls.count {
            let index = next
            group.addTask { try await fetch(index) }
            next += 1
        }
        try await group.waitForAll()
    }
} catch {
    failure = error
}
try await client.shutdown().get()
if let failure {
    FileHandle.standardError.write(Data("ahc-floor: \(failure)\n".utf8))
    exit(1)
}
