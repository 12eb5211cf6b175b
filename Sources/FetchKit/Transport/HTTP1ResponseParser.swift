import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Reads HTTP/1.1 responses from a connection's bytes (RFC 9112) for `HTTP1ExchangeHandler`: the
/// head straight into a `TransportResponseHead`, the body as slices of the buffers read.
///
/// NIO's decoder (llhttp, behind a `ByteToMessageHandler`) made each response into NIO's own head
/// and headers, boxed every part in `NIOAny` and cast it back out in the next handler, and the
/// head was then copied field by field into the session's: 16,000 instructions a response of the
/// 190,000 a small file's job takes. This does what the session needs and no more, with NIO's
/// rules where it has a choice to make:
///
/// - Framing (§6.3): no body for a `HEAD`'s response, a 204 or a 304; `Transfer-Encoding` ending
///   in `chunked` wins over `Content-Length`, and the connection is then not reused; any other
///   `Transfer-Encoding`, or no length at all, is read until the server closes. Several
///   `Content-Length`s must agree.
/// - Interim responses (1xx but 101) are skipped; 101 is refused (nothing here asks to upgrade).
/// - `Connection: close`, or an HTTP/1.0 response without `keep-alive`, ends the connection.
/// - Refused as not valid HTTP/1.1: a head over 80 KiB (NIO's limit), a line not ended by CRLF,
///   a field name that is not a token or a value with a control character but tab, a folded
///   field, a malformed length or chunk size, bytes where a chunk's CRLF belongs.
struct HTTP1ResponseParser {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private enum State {
        /// No request outstanding: bytes now are unsolicited.
        case idle
        /// Waiting for the whole head (its bytes so far in `pending`).
        case head
        case fixed(remaining: Int64)
        /// Waiting for a chunk-size line (its bytes so far in `pending`).
        case chunkSize
        case chunkData(remaining: Int64)
        /// The CRLF after a chunk's data (how many of its two bytes have come).
        case chunkEnd(seen: Int)
        /// The trailer section after the last chunk, up to its empty line (in `pending`).
        case trailers
        case untilClose
    }

    private var state = State.idle
    private var pending = ByteBuffer()
    private var headRequest = false
    private var keepAlive = true

    /// NIO's decoder's limit for a head's fields.
    static let maximumHeadSize = 80 * 1024

    /// The body runs until the server closes the connection.
    var endsAtClose: Bool {
        if case .untilClose = state { return true }
        return false
    }

    /// A request was written: what comes next is its response (without a body if it was a `HEAD`).
    mutating func expectResponse(toHead: Bool) {
        state = .head
        headRequest = toHead
        keepAlive = true
        pending.clear()
    }

    /// Takes every byte of `buffer`, returning what they complete: the final head, body bytes,
    /// the end. Bytes after the end of the response (which no request asked for) are dropped and
    /// the connection is marked not to be reused.
    mutating func read(_ buffer: inout ByteBuffer) throws -> ResponseParts {
        var parts = ResponseParts()
        while buffer.readableBytes > 0 {
            switch state {
            case .idle:
                // After the end, or with no request: the connection can't be trusted to be in step.
                buffer.moveReaderIndex(to: buffer.writerIndex)
                parts.keepAlive = false
                keepAlive = false
            case .head:
                guard let line = try takeThrough(terminator: "\r\n\r\n", from: &buffer, limit: Self.maximumHeadSize, what: "response head") else {
                    return parts
                }
                try startBody(parsingHead: line, into: &parts)
            case .fixed(let remaining):
                let count = Int(min(Int64(buffer.readableBytes), remaining))
                append(buffer.readSlice(length: count)!, to: &parts)
                if remaining - Int64(count) == 0 { end(&parts) } else { state = .fixed(remaining: remaining - Int64(count)) }
            case .chunkSize:
                guard let line = try takeThrough(terminator: "\r\n", from: &buffer, limit: 4096, what: "chunk size") else { return parts }
                let size = try Self.chunkSize(line)
                state = size == 0 ? .trailers : .chunkData(remaining: size)
            case .chunkData(let remaining):
                let count = Int(min(Int64(buffer.readableBytes), remaining))
                append(buffer.readSlice(length: count)!, to: &parts)
                state = remaining - Int64(count) == 0 ? .chunkEnd(seen: 0) : .chunkData(remaining: remaining - Int64(count))
            case .chunkEnd(let seen):
                let byte = buffer.readInteger(as: UInt8.self)!
                guard byte == (seen == 0 ? UInt8(ascii: "\r") : UInt8(ascii: "\n")) else { throw Failure(description: "a chunk's data is not followed by CRLF") }
                state = seen == 0 ? .chunkEnd(seen: 1) : .chunkSize
            case .trailers:
                // Empty at once ("0\r\n\r\n"), or trailer fields up to a blank line; they are read past, not kept.
                if pending.readableBytes == 0, buffer.readableBytes >= 2, buffer.getInteger(at: buffer.readerIndex, as: UInt16.self) == 0x0D0A {
                    buffer.moveReaderIndex(forwardBy: 2)
                    end(&parts)
                    continue
                }
                pending.writeStaticString(pending.readableBytes == 0 ? "\r\n" : "")  // so that no trailers ends in a blank line too
                guard try takeThrough(terminator: "\r\n\r\n", from: &buffer, limit: Self.maximumHeadSize, what: "trailer section") != nil else { return parts }
                end(&parts)
            case .untilClose:
                append(buffer.readSlice(length: buffer.readableBytes)!, to: &parts)
            }
        }
        return parts
    }

    /// The connection closed: the end of a body read until the close, else nothing (a response
    /// cut short is the connection's failure, which the exchange reports).
    mutating func closed() -> ResponseParts? {
        guard endsAtClose else { return nil }
        state = .idle
        return ResponseParts(end: true)
    }

    /// The bytes up to and including `terminator`, from what is pending and `buffer`; nil (with
    /// everything kept in `pending`) until it has come.
    private mutating func takeThrough(terminator: StaticString, from buffer: inout ByteBuffer, limit: Int, what: String) throws -> ByteBuffer? {
        if pending.readableBytes == 0, let end = Self.find(terminator, in: buffer, from: 0) {
            return buffer.readSlice(length: end)!
        }
        // Look again only where the terminator could now end: from just before the new bytes.
        let searchFrom = max(0, pending.readableBytes - terminator.utf8CodeUnitCount + 1)
        pending.writeBuffer(&buffer)
        guard let end = Self.find(terminator, in: pending, from: searchFrom) else {
            if pending.readableBytes > limit { throw Failure(description: "the \(what) is larger than \(limit / 1024) KiB") }
            return nil
        }
        let taken = pending.readSlice(length: end)!
        // What came after the terminator is the next part's: it goes back in front of the rest.
        buffer = pending
        pending = ByteBuffer()
        return taken
    }

    /// The length up to and including the first `terminator` at or after `start`, or nil.
    private static func find(_ terminator: StaticString, in buffer: ByteBuffer, from start: Int) -> Int? {
        buffer.withUnsafeReadableBytes { bytes in
            guard let base = bytes.baseAddress else { return nil }
            let count = terminator.utf8CodeUnitCount, first = Int32(terminator.utf8Start.pointee)
            var at = start
            // The terminator's first byte by memchr, then the rest compared in place.
            while at + count <= bytes.count, let found = memchr(base + at, first, bytes.count - at) {
                at = base.distance(to: UnsafeRawPointer(found))
                if at + count > bytes.count { return nil }
                if memcmp(base + at, terminator.utf8Start, count) == 0 { return at + count }
                at += 1
            }
            return nil
        }
    }

    private mutating func append(_ slice: ByteBuffer, to parts: inout ResponseParts) {
        guard slice.readableBytes > 0 else { return }
        if var body = parts.body {
            var slice = slice
            body.writeBuffer(&slice)  // several chunks in one read: one buffer for the session
            parts.body = body
        } else {
            parts.body = slice
        }
    }

    private mutating func end(_ parts: inout ResponseParts) {
        state = .idle
        parts.end = true
        if !keepAlive { parts.keepAlive = false }
    }

    // MARK: - The head

    private mutating func startBody(parsingHead bytes: ByteBuffer, into parts: inout ResponseParts) throws {
        let head = try bytes.withUnsafeReadableBytes { try Self.head(UnsafeRawBufferPointer($0)) }
        if head.status / 100 == 1 {
            guard head.status != 101 else { throw Failure(description: "the server switched protocols (101), which was not asked for") }
            state = .head  // an interim response: the final one follows
            return
        }
        keepAlive = head.keepAlive
        parts.head = head.response
        parts.keepAlive = head.keepAlive
        if headRequest || head.status == 204 || head.status == 304 {
            end(&parts)
        } else if head.chunked {
            state = .chunkSize
        } else if head.transferEncoded || head.length == nil {
            keepAlive = false
            parts.keepAlive = false
            state = .untilClose
        } else if let length = head.length, length > 0 {
            state = .fixed(remaining: length)
        } else {
            end(&parts)
        }
    }

    private struct Head {
        var response: TransportResponseHead
        var status: Int
        var keepAlive: Bool
        var length: Int64?
        var chunked: Bool
        var transferEncoded: Bool
    }

    /// Parses a head: the status line and the fields, through the blank line.
    private static func head(_ bytes: UnsafeRawBufferPointer) throws -> Head {
        // "HTTP/1.x SSS[ reason]\r\n"
        guard bytes.count >= 14, bytes.starts(with: "HTTP/1.".utf8), bytes[7] >= UInt8(ascii: "0"), bytes[7] <= UInt8(ascii: "9"),
              bytes[8] == UInt8(ascii: " ") else { throw Failure(description: "the status line is not HTTP/1.x") }
        let minor = Int(bytes[7] - UInt8(ascii: "0"))
        var status = 0
        for index in 9..<12 {
            let digit = bytes[index]
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { throw Failure(description: "the status code is not three digits") }
            status = status * 10 + Int(digit - UInt8(ascii: "0"))
        }
        guard status >= 100, bytes[12] == UInt8(ascii: " ") || bytes[12] == UInt8(ascii: "\r") else {
            throw Failure(description: "the status line is malformed")
        }
        var index = 12
        while bytes[index] != UInt8(ascii: "\r") { index += 1 }
        guard bytes[index + 1] == UInt8(ascii: "\n") else { throw Failure(description: "a line does not end with CRLF") }
        index += 2

        var headers = HTTPHeaders()
        // Room for a typical response's fields at once: grown one by one, the array was made four
        // times (1, 2, 4, 8 fields), a `malloc`, a copy and a `free` each.
        headers.reserveCapacity(12)
        let isToken = HTTP1RequestEncoding.tokenBytes  // read once, not through its accessor per byte
        var length: Int64?, chunked = false, transferEncoded = false
        var close = false, keepAliveToken = false
        // Every field line up to the blank line that ends the head.
        while !(bytes[index] == UInt8(ascii: "\r") && bytes[index + 1] == UInt8(ascii: "\n")) {
            let start = index
            guard bytes[start] != UInt8(ascii: " "), bytes[start] != UInt8(ascii: "\t") else { throw Failure(description: "a header field is folded over two lines") }
            var colon = start
            while colon < bytes.count, bytes[colon] != UInt8(ascii: ":"), bytes[colon] != UInt8(ascii: "\r") {
                guard isToken[Int(bytes[colon])] else { throw Failure(description: "a header field name is not a token") }
                colon += 1
            }
            guard bytes[colon] == UInt8(ascii: ":"), colon > start else { throw Failure(description: "a header line has no field name and colon") }
            var end = colon + 1
            while bytes[end] != UInt8(ascii: "\r") {
                let byte = bytes[end]
                guard HTTP1RequestEncoding.isFieldValueByte(byte) else { throw Failure(description: "a header value has a control character") }
                end += 1
            }
            guard bytes[end + 1] == UInt8(ascii: "\n") else { throw Failure(description: "a line does not end with CRLF") }
            let name = UnsafeRawBufferPointer(rebasing: bytes[start..<colon])
            let value = trimmed(UnsafeRawBufferPointer(rebasing: bytes[(colon + 1)..<end]))
            switch name.count {
            case 14 where equalsIgnoringCase(name, "content-length"):
                let parsed = try contentLength(value)
                if let length, length != parsed { throw Failure(description: "the response has two different Content-Lengths") }
                length = parsed
            case 17 where equalsIgnoringCase(name, "transfer-encoding"):
                transferEncoded = true
                // The last coding decides (a later field's, or a later item of a list).
                let last = value.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: true).last.map { trimmed(UnsafeRawBufferPointer(rebasing: $0)) }
                if let last { chunked = equalsIgnoringCase(last, "chunked") }
            case 10 where equalsIgnoringCase(name, "connection"):
                forEachListItem(of: value) { token in
                    if equalsIgnoringCase(token, "close") { close = true } else if equalsIgnoringCase(token, "keep-alive") { keepAliveToken = true }
                }
            default:
                break
            }
            headers.add(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
            index = end + 2
        }
        // RFC 9112 §6.3: a Transfer-Encoding overrides a Content-Length, and such a response may be
        // an attempt at smuggling: its connection is not used again. Chunked is HTTP/1.1's only.
        let keepAlive = !close && (minor >= 1 || keepAliveToken) && !(transferEncoded && length != nil)
        if transferEncoded {
            if minor == 0 { chunked = false }
            length = nil
        }
        let response = TransportResponseHead(status: status, headers: headers, expectedLength: chunked || transferEncoded ? nil : length,
                                             httpVersion: minor == 0 ? "1.0" : "1.1")
        return Head(response: response, status: status, keepAlive: keepAlive, length: length, chunked: chunked, transferEncoded: transferEncoded)
    }

    private static func contentLength(_ value: UnsafeRawBufferPointer) throws -> Int64 {
        // "5", or a list of one value repeated ("5, 5"), which RFC 9110 §8.6 allows.
        var result: Int64?
        for item in value.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            let item = trimmed(UnsafeRawBufferPointer(rebasing: item))
            guard !item.isEmpty, item.count <= 18, item.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                throw Failure(description: "the Content-Length is not a number")
            }
            let number = item.reduce(Int64(0)) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
            if let result, result != number { throw Failure(description: "the response has two different Content-Lengths") }
            result = number
        }
        return result!
    }

    /// A chunk-size line ("1a2f[;extensions]\r\n") as a number.
    private static func chunkSize(_ line: ByteBuffer) throws -> Int64 {
        try line.withUnsafeReadableBytes { bytes in
            var size: Int64 = 0, digits = 0
            for byte in bytes.dropLast(2) {
                let value: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): value = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): value = byte - UInt8(ascii: "A") + 10
                case UInt8(ascii: ";"), UInt8(ascii: " "), UInt8(ascii: "\t"):
                    guard digits > 0 else { throw Failure(description: "a chunk size is not a hexadecimal number") }
                    return size  // extensions (and whitespace before them) are ignored
                default: throw Failure(description: "a chunk size is not a hexadecimal number")
                }
                guard digits < 15 else { throw Failure(description: "a chunk size is too large") }
                size = size << 4 | Int64(value)
                digits += 1
            }
            guard digits > 0 else { throw Failure(description: "a chunk size is not a hexadecimal number") }
            return size
        }
    }

    /// Calls `body` with each item of a comma-separated field value, trimmed, in place: `split`
    /// made an array of them for every response's `Connection: keep-alive`.
    private static func forEachListItem(of value: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        var start = 0
        for index in 0...value.count where index == value.count || value[index] == UInt8(ascii: ",") {
            body(trimmed(UnsafeRawBufferPointer(rebasing: value[start..<index])))
            start = index + 1
        }
    }

    private static func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var start = 0, end = bytes.count
        while start < end, bytes[start] == UInt8(ascii: " ") || bytes[start] == UInt8(ascii: "\t") { start += 1 }
        while end > start, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
    }

    /// `bytes` equal `lowercase` (ASCII, lower case) ignoring ASCII case.
    private static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let other = lowercase.utf8Start
        for index in 0..<bytes.count where bytes[index] | 0x20 != other[index] { return false }
        return true
    }
}
