// FetchKit as a library, without YAML: an Alamofire-style router enum, a request adapter, the
// retry policy, an event monitor, and a Session that sends them.
//
//   swift run library-example                 # against the built-in test server on 127.0.0.1
//   swift run library-example http://host:8080  # against a server of yours that has /echo, /flaky
import FetchKit
import FetchKitTesting
import FetchKitURLRequest
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The endpoints, as a `URLRequestConvertible` enum (the pattern Alamofire's docs call a router).
enum Endpoint: URLRequestConvertible {
    case echo(message: String)
    case flaky(key: String, failures: Int)

    static let baseURL = LockedValue("http://127.0.0.1:8080")

    func asURLRequest() throws -> URLRequest {
        var components = URLComponents(string: Self.baseURL.value)!
        switch self {
        case .echo(let message):
            components.path = "/echo"
            components.queryItems = [URLQueryItem(name: "message", value: message)]
        case .flaky(let key, let failures):
            components.path = "/flaky/\(key)"
            components.queryItems = [URLQueryItem(name: "fail", value: String(failures))]
        }
        var request = URLRequest(url: components.url!)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        return request
    }
}

/// Adds a request id to every attempt, retries included.
struct RequestIDAdapter: RequestInterceptor {
    func adapt(_ request: BuiltRequest, for state: RequestState) async throws -> BuiltRequest {
        var request = request
        request.headers.update(name: "X-Request-ID", value: "example-\(state.id)-\(state.attempt)")
        return request
    }
}

/// A tiny thread-safe box for the base URL.
final class LockedValue: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: String
    init(_ value: String) { stored = value }
    var value: String {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

@main
struct LibraryExample {
    static func main() async throws {
        var server: TestServer?
        if CommandLine.arguments.count > 1 {
            Endpoint.baseURL.value = CommandLine.arguments[1]
        } else {
            server = try await TestServer.start()
            Endpoint.baseURL.value = server!.baseURL
        }

        var monitor = ClosureEventMonitor()
        monitor.requestDidGatherMetrics = { request, metrics in
            print("\(request.method) \(request.url) attempt \(request.attempt): HTTP \(metrics.status), \(metrics.bytes) bytes")
        }
        monitor.requestIsRetrying = { _, retry in
            print("  retrying (\(retry.reason)) in \(retry.delay)")
        }
        let session = Session(interceptor: RequestIDAdapter(), eventMonitors: [monitor])

        var retry = RetryOptions()
        retry.backoffScale = .milliseconds(100)
        let options = RequestOptions(validator: ResponseValidator(contentType: .accept), retryPolicy: RetryPolicy(retry))

        do {
            let echo = try await session.data(Endpoint.echo(message: "hello"), options: options)
            print(String(decoding: echo.data, as: UTF8.self))
            let flaky = try await session.data(Endpoint.flaky(key: "example", failures: 2), options: options)
            print("flaky answered after \(flaky.response.attempts) attempts: \(String(decoding: flaky.data, as: UTF8.self))")
        } catch let error as FetchError {
            print("failed: \(error)")
        }
        try await session.shutdown()
        try await server?.shutdown()
    }
}
