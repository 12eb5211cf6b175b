import Foundation

/// A `multipart/form-data` body (RFC 7578), after Alamofire's `MultipartFormData`: text parts and file
/// parts. File parts are read from disk when the body is written, in chunks, so large uploads are
/// never held in memory whole.
public struct MultipartFormData: Sendable {
    public enum Part: Sendable, Equatable {
        case text(name: String, value: String, contentType: String?)
        case file(name: String, path: String, filename: String, contentType: String)

        public var name: String {
            switch self {
            case .text(let name, _, _), .file(let name, _, _, _): return name
            }
        }
    }

    public let boundary: String
    public var parts: [Part]

    /// Bodies up to this size are built in memory; larger ones go through a temporary file
    /// (Alamofire's `encodingMemoryThreshold`, 10 MB).
    public static let encodingMemoryThreshold: Int64 = 10_000_000

    public init(boundary: String = MultipartFormData.randomBoundary(), parts: [Part] = []) {
        self.boundary = boundary
        self.parts = parts
    }

    public static func randomBoundary() -> String {
        "fetchctl.boundary." + (0..<16).map { _ in String(UInt8.random(in: 0...15), radix: 16) }.joined()
    }

    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// The part's header block, ending in the blank line before its content.
    func headerBlock(for part: Part) -> String {
        switch part {
        case .text(let name, _, let contentType):
            var block = "Content-Disposition: form-data; name=\"\(Self.quoteEscaped(name))\"\r\n"
            if let contentType { block += "Content-Type: \(contentType)\r\n" }
            return block + "\r\n"
        case .file(let name, _, let filename, let contentType):
            return "Content-Disposition: form-data; name=\"\(Self.quoteEscaped(name))\"; filename=\"\(Self.quoteEscaped(filename))\"\r\n"
                + "Content-Type: \(contentType)\r\n\r\n"
        }
    }

    /// RFC 7578 §4.2: quotes and line breaks in names are percent-encoded.
    static func quoteEscaped(_ s: String) -> String {
        s.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }

    /// The body's exact length in bytes (file parts measured on disk).
    public func contentLength() throws -> Int64 {
        var total: Int64 = 0
        for (index, part) in parts.enumerated() {
            total += Int64(boundaryLine(first: index == 0).utf8.count + headerBlock(for: part).utf8.count)
            switch part {
            case .text(_, let value, _): total += Int64(value.utf8.count)
            case .file(_, let path, _, _): total += try Self.fileSize(path)
            }
        }
        return total + Int64(finalBoundary.utf8.count)
    }

    private func boundaryLine(first: Bool) -> String { (first ? "" : "\r\n") + "--\(boundary)\r\n" }
    private var finalBoundary: String { parts.isEmpty ? "--\(boundary)--\r\n" : "\r\n--\(boundary)--\r\n" }

    static func fileSize(_ path: String) throws -> Int64 {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let size = attributes[.size] as? NSNumber else {
            throw RequestBuildError("cannot read multipart file '\(path)'")
        }
        return size.int64Value
    }

    /// Writes the whole body through `sink`, file contents in 64 KiB chunks.
    public func write(to sink: (Data) throws -> Void) throws {
        for (index, part) in parts.enumerated() {
            try sink(Data((boundaryLine(first: index == 0) + headerBlock(for: part)).utf8))
            switch part {
            case .text(_, let value, _):
                try sink(Data(value.utf8))
            case .file(_, let path, _, _):
                guard let handle = FileHandle(forReadingAtPath: path) else {
                    throw RequestBuildError("cannot read multipart file '\(path)'")
                }
                defer { try? handle.close() }
                while let chunk = try handle.read(upToCount: 65_536), !chunk.isEmpty { try sink(chunk) }
            }
        }
        try sink(Data(finalBoundary.utf8))
    }

    /// The whole body in memory (for small bodies and tests).
    public func encode() throws -> Data {
        var data = Data()
        try write { data.append($0) }
        return data
    }

    /// A stream of the body: in memory below the threshold, else from a temporary file.
    public func makeInputStream() throws -> InputStream {
        if try contentLength() <= Self.encodingMemoryThreshold { return InputStream(data: try encode()) }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("fetchctl-multipart-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: url.path, contents: nil), let handle = FileHandle(forWritingAtPath: url.path) else {
            throw RequestBuildError("cannot create a temporary file for a multipart body")
        }
        defer { try? handle.close() }
        try write { try handle.write(contentsOf: $0) }
        guard let stream = InputStream(url: url) else { throw RequestBuildError("cannot read the multipart body back") }
        return stream
    }

    /// A content type from a file's extension, as Alamofire infers one; `application/octet-stream` otherwise.
    public static func mimeType(forPath path: String) -> String {
        let types = [
            "json": "application/json", "txt": "text/plain", "csv": "text/csv", "html": "text/html", "xml": "application/xml",
            "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "svg": "image/svg+xml",
            "pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip", "tar": "application/x-tar",
            "yaml": "application/yaml", "yml": "application/yaml", "mp4": "video/mp4", "webp": "image/webp",
        ]
        return types[(path as NSString).pathExtension.lowercased()] ?? "application/octet-stream"
    }
}
