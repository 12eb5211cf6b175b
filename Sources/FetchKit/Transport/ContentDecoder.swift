import CZlib
import Foundation
import NIOCore

/// Streams a `gzip` or `deflate` response body back to its bytes (zlib's inflate). Used only for
/// requests that sent `Accept-Encoding` (`save` jobs); downloads always keep the bytes as served.
/// Accepts zlib-wrapped and raw deflate, since servers send both as `deflate`.
final class ContentDecoder: Sendable {
    /// The encodings this decoder handles, as `Content-Encoding` names them.
    static let supported: Set<String> = ["gzip", "x-gzip", "deflate"]

    private struct Stream {
        var z = z_stream()
        var initialized = false
        var sawOutput = false
        var finished = false
        var raw = false
    }

    private let stream: LockedBox<Stream>
    private let encoding: String

    /// A decoder for `encoding`, or nil when the body needs no decoding (or one this can't do).
    /// Checked before anything is made: most responses have no `Content-Encoding`, and a failable
    /// initializer of a class allocates its object before it can return nil.
    static func make(contentEncoding: String?) -> ContentDecoder? {
        guard let contentEncoding else { return nil }
        let value = contentEncoding.trimmingCharacters(in: .whitespaces).lowercased()
        guard supported.contains(value) else { return nil }
        return ContentDecoder(encoding: value)
    }

    /// Whether `contentEncoding` is one this decodes (what `make` would make a decoder for).
    static func decodes(_ contentEncoding: String) -> Bool {
        supported.contains(contentEncoding.trimmingCharacters(in: .whitespaces).lowercased())
    }

    private init(encoding: String) {
        self.encoding = encoding
        stream = LockedBox(Stream())
    }

    deinit {
        stream.withLock { s in if s.initialized { inflateEnd(&s.z) } }
    }

    /// The decoded bytes of `chunk` (possibly none yet).
    func decode(_ chunk: ByteBuffer, url: String) throws -> ByteBuffer {
        try stream.withLock { s in
            if !s.initialized { try Self.initialize(&s, raw: false, url: url) }
            if s.finished { return ByteBuffer() }
            var input = Array(chunk.readableBytesView)
            var output = ByteBuffer()
            do {
                try Self.inflate(&s, input: &input, into: &output, url: url)
            } catch where encoding == "deflate" && !s.sawOutput && !s.raw {
                // Raw deflate without the zlib wrapper: start again in raw mode.
                inflateEnd(&s.z)
                s = Stream()
                try Self.initialize(&s, raw: true, url: url)
                input = Array(chunk.readableBytesView)
                try Self.inflate(&s, input: &input, into: &output, url: url)
            }
            return output
        }
    }

    private static func initialize(_ s: inout Stream, raw: Bool, url: String) throws {
        // 15 + 32: zlib or gzip header, detected; -15: raw deflate.
        let status = inflateInit2_(&s.z, raw ? -15 : 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw FetchError(.io, "cannot start zlib (\(status))", url: url) }
        s.initialized = true
        s.raw = raw
    }

    private static func inflate(_ s: inout Stream, input: inout [UInt8], into output: inout ByteBuffer, url: String) throws {
        try input.withUnsafeMutableBufferPointer { inBuffer in
            s.z.next_in = inBuffer.baseAddress
            s.z.avail_in = UInt32(inBuffer.count)
            while true {
                var code: Int32 = Z_OK
                var produced = 0
                var outputFull = false
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: 64 * 1024) { out in
                    s.z.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
                    s.z.avail_out = UInt32(out.count)
                    code = CZlib.inflate(&s.z, Z_NO_FLUSH)
                    outputFull = s.z.avail_out == 0
                    produced = out.count - Int(s.z.avail_out)
                    return produced
                }
                if produced > 0 { s.sawOutput = true }
                if code == Z_STREAM_END {
                    s.finished = true
                    return
                }
                guard code == Z_OK || code == Z_BUF_ERROR else {
                    throw FetchError(.validation, "the compressed body is corrupt (zlib error \(code))", url: url)
                }
                // Done when the input is used up and the output had room to spare.
                if !outputFull && (s.z.avail_in == 0 || code == Z_BUF_ERROR) { return }
            }
        }
    }
}
