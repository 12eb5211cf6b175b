import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Where a run's metrics go: a file for node_exporter's textfile collector, or a Pushgateway.
public enum MetricsExport {
    /// Writes `text` to `path` through a temporary file in the same directory, renamed into place:
    /// the textfile collector never reads half a file.
    public static func write(_ text: String, to path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = (directory.isEmpty ? "" : directory + "/") + ".\((path as NSString).lastPathComponent).tmp-\(getpid())"
        do {
            try FileIO.createDirectory(containing: path)
            try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
            guard rename(temporary, path) == 0 else {
                throw FetchError(.io, "cannot write the metrics file '\(path)': \(String(cString: strerror(errno)))")
            }
        } catch let error as FetchError {
            unlink(temporary)
            throw error
        } catch {
            unlink(temporary)
            throw FetchError(.io, "cannot write the metrics file '\(path)': \(error.localizedDescription)")
        }
    }

    /// The Pushgateway URL for a run's group: `job="fetchctl"`, grouped by the jobs file's name and
    /// the shard (`/metrics/job/fetchctl/jobs_file@base64/…/shard@base64/…`; base64url, so any name is safe).
    public static func groupURL(_ gateway: String, jobsFile: String, shard: String?) -> String {
        func encoded(_ value: String) -> String {
            Data(value.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        var url = gateway.hasSuffix("/") ? String(gateway.dropLast()) : gateway
        url += "/metrics/job/fetchctl/jobs_file@base64/" + encoded(jobsFile)
        if let shard { url += "/shard@base64/" + encoded(shard) }
        return url
    }

    /// Replaces the group's metrics on the Pushgateway at `gateway` with `text` (HTTP PUT). Throws
    /// with the gateway's answer when it refuses them.
    public static func push(_ text: String, to gateway: String, jobsFile: String, shard: String?, timeout: Duration = .seconds(10)) async throws {
        let url = groupURL(gateway, jobsFile: jobsFile, shard: shard)
        let shown = Redactor.redactURLUserinfo(url)
        var request = HTTPClientRequest(url: url)
        request.method = .PUT
        request.headers.add(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")
        request.body = .bytes(ByteBuffer(string: text))
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .nanoseconds(Int64(timeout.inNanoseconds)))
        } catch {
            throw FetchError(.connection, "cannot push the metrics: \(error)", url: shown)
        }
        let body = try? await response.body.collect(upTo: 64 * 1024)
        guard (200..<300).contains(Int(response.status.code)) else {
            let answer = body.map { String(buffer: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
            throw FetchError(.status, "the Pushgateway refused the metrics: HTTP \(response.status.code) \(answer)", url: shown, status: Int(response.status.code))
        }
    }
}
