import Foundation
import NIOCore

/// An HTTP/1.1 request as the bytes `NIOTransport` writes: the request line, the request's own
/// fields, `Host` and `Content-Length` where it has none, the blank line and the body, encoded
/// once into one buffer straight from the session's `BuiltRequest`.
///
/// NIO's client pipeline did this in three handlers, each taking the request apart again: the
/// header validator and the encoder unwrapped it from `NIOAny` with a dynamic cast, the decoder
/// cast it once more to note the method, and the head was built as NIO's `HTTPHeaders` first.
/// Sending a request cost 18,600 instructions that way, a tenth of a small file's job. Here the
/// connection writes one `ByteBuffer`, which passes no handler but TLS, and tells the decoder the
/// method itself (`HTTP1ExchangeHandler`).
///
/// The framing is NIO's encoder's, which these requests went through before: a `TRACE` sends no
/// `Content-Length` or `Transfer-Encoding`; a request with a `Content-Length` (its own, or the one
/// added for its body, `0` for a `POST`, `PUT` or `PATCH` without one) sends no
/// `Transfer-Encoding`; any other request's fields go as they are, and one whose first
/// `Transfer-Encoding` is `chunked` ends with the empty last chunk. So are the checks of NIO's
/// validator: the method and every field name a token, no control character but tab in a value,
/// only the characters RFC 9112 allows in the request target. A request that fails them is never
/// sent: it fails with `invalid_request`, naming the field.
enum HTTP1RequestEncoding {
    /// Encodes `request`, sent to `target` (`NIOTransport.target(of:)`, which takes only requests
    /// with no body or one in memory). Throws `FetchError(.invalidRequest)` for what HTTP/1.1
    /// can't carry.
    static func encode(_ request: BuiltRequest, target: NIOTransport.Target, url: @autoclosure () -> String) throws -> ByteBuffer {
        let method = request.method.rawValue
        let body: Data? = if case .data(let data) = request.body { data } else { nil }
        var hasHost = false, hasLength = false
        var size = method.utf8.count + target.path.utf8.count + 14  // "M T HTTP/1.1\r\n" and the blank line
        try request.headers.forEachField { name, value in
            guard isToken(name) else { throw invalid("the header name '\(name)' is not a token (RFC 9110 §5.1)", url()) }
            guard isFieldValue(value) else {
                throw invalid("the header '\(name)' has a line break or another control character in its value", url())
            }
            if !hasHost, UTF8Text.equalsIgnoringASCIICase(name, "Host") { hasHost = true }
            if !hasLength, UTF8Text.equalsIgnoringASCIICase(name, "Content-Length") { hasLength = true }
            size += name.utf8.count + value.utf8.count + 4
        }
        guard isRequestTarget(target.path) else {
            // The target itself is left out: the query may hold a secret (the URL beside the message is redacted).
            throw invalid("the request target has a character that must be percent-encoded (RFC 9112 §3.2)", url())
        }
        // The length added for a body (or an empty POST, PUT or PATCH), as NIO's pipeline had it.
        var addedLength: Int?
        if !hasLength {
            if let body { addedLength = body.count } else if request.method == .post || request.method == .put || request.method == .patch { addedLength = 0 }
        }
        let isTrace = request.method == .trace
        let framedByLength = !isTrace && (hasLength || addedLength != nil)
        if !hasHost { size += target.hostField.utf8.count + 8 }
        if addedLength != nil, !isTrace { size += 16 + 20 }  // "Content-Length: " and the digits
        size += body?.count ?? 0

        var buffer = ByteBufferAllocator().buffer(capacity: size + 5)
        buffer.writeString(method)
        buffer.writeInteger(UInt8(ascii: " "))
        buffer.writeString(target.path)
        buffer.writeStaticString(" HTTP/1.1\r\n")
        var chunked = false, sawTransferEncoding = false
        request.headers.forEachField { name, value in
            let isLength = UTF8Text.equalsIgnoringASCIICase(name, "Content-Length")
            let isTransferEncoding = UTF8Text.equalsIgnoringASCIICase(name, "Transfer-Encoding")
            if isTrace, isLength || isTransferEncoding { return }
            if isTransferEncoding {
                if framedByLength { return }
                if !sawTransferEncoding { chunked = value == "chunked" }
                sawTransferEncoding = true
            }
            buffer.writeString(name)
            buffer.writeStaticString(": ")
            buffer.writeString(value)
            buffer.writeStaticString("\r\n")
        }
        if !hasHost {
            buffer.writeStaticString("Host: ")
            buffer.writeString(target.hostField)
            buffer.writeStaticString("\r\n")
        }
        if let addedLength, !isTrace {
            buffer.writeStaticString("Content-Length: ")
            buffer.writeString(String(addedLength))
            buffer.writeStaticString("\r\n")
        }
        buffer.writeStaticString("\r\n")
        if let body, !body.isEmpty { buffer.writeBytes(body) }
        if chunked { buffer.writeStaticString("0\r\n\r\n") }
        return buffer
    }

    private static func invalid(_ message: String, _ url: String) -> FetchError {
        FetchError(.invalidRequest, "cannot send the request: \(message)", url: url)
    }

    /// `tchar`s only, at least one (RFC 9110 §5.6.2).
    static func isToken(_ text: String) -> Bool {
        var text = text
        let table = tokenBytes  // once, not through its accessor for every byte
        return text.withUTF8 { bytes in !bytes.isEmpty && bytes.allSatisfy { table[Int($0)] } }
    }

    /// No control character but horizontal tab (RFC 9110 §5.5: CR, LF and NUL are dangerous, and
    /// NIO's validator refused every other control too); bytes from 0x80 up are `obs-text`.
    static func isFieldValue(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in bytes.allSatisfy(isFieldValueByte) }
    }

    /// A byte a field value may hold: not a control character, but tab (both ways: `HTTP1ResponseParser`).
    static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte != 0x7F || byte == 0x09
    }

    /// Only the bytes RFC 9112 §3.2's request-target grammar has, taken literally: ALPHA, DIGIT,
    /// `-._~`, `:/?#[]@`, `!$&'()*+,;=` and `%` (what NIO's validator allowed).
    static func isRequestTarget(_ text: String) -> Bool {
        var text = text
        let table = targetBytes
        return text.withUTF8 { bytes in !bytes.isEmpty && bytes.allSatisfy { table[Int($0)] } }
    }

    /// Which bytes are `tchar`s (RFC 9110 §5.6.2), by value: for field names both ways.
    static let tokenBytes = byteTable(alphanumericsAnd: "!#$%&'*+-.^_`|~")

    private static let targetBytes = byteTable(alphanumericsAnd: "-._~:/?#[]@!$&'()*+,;=%")

    /// A table by byte value: true for ASCII letters, digits and the bytes of `others`. Each of
    /// `others`' bytes is set in turn: asking `others.utf8.contains` for each of 256 bytes cost
    /// about 110,000 instructions a table at the start of every run.
    private static func byteTable(alphanumericsAnd others: StaticString) -> [Bool] {
        var table = [Bool](repeating: false, count: 256)
        for range in [UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z")] {
            for byte in range { table[Int(byte)] = true }
        }
        others.withUTF8Buffer { bytes in
            for byte in bytes { table[Int(byte)] = true }
        }
        return table
    }
}
