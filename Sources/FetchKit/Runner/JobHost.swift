/// The host a job's first request goes to, read from its URL's text before the request is built:
/// what `JobQueue` spreads jobs over when `per_host` can make one wait. nil when the URL's text
/// doesn't say (a placeholder with no value, no `://`): such a job is handed out in order.
///
/// Only the URL's start is rendered, up to the end of its authority; a URL whose host is written
/// out renders no placeholder at all. An interceptor that changes the host, or a redirect, is not
/// foreseen: the session's `HostLimiter` still holds every request to `per_host`.
extension ExpandedJob {
    var firstRequestHost: JobHost.Key? {
        // Gathered as bytes into one buffer, looked at after each part: this runs for every job
        // the queue hands out while hosts can be full.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        for part in route.urlParts.path.parts {
            guard let text = text(of: part) else { return nil }
            UTF8Text.append(text, to: &bytes)
            if let key = bytes.withUnsafeBufferPointer({ JobHost.key(inURL: $0, complete: false) }) { return key }
        }
        return bytes.withUnsafeBufferPointer { JobHost.key(inURL: $0, complete: true) }
    }

    /// A part of the URL as `router` renders it; nil for a placeholder with no value yet.
    private func text(of part: Template.Part) -> String? {
        switch part {
        case .literal(let literal): return literal
        case .placeholder(let name): return (bindings[name] ?? matrixValue(name) ?? params[name])?.text
        }
    }

    /// `{{matrix.key}}`'s value, as `router` binds it.
    private func matrixValue(_ name: String) -> ParameterValue? {
        guard !matrix.isEmpty, name.hasPrefix("matrix.") else { return nil }
        let key = name.dropFirst("matrix.".count)
        return matrix.first { $0.key == key }?.value
    }
}

enum JobHost {
    /// A host as `JobQueue` counts and groups jobs: the 64-bit FNV-1a hash of its name with ASCII
    /// letters lowercased (as `URL.host` is compared), without the port or any userinfo. A hash,
    /// not the name: the queue looks a job's host up several times and keeps no string of it.
    /// Two hosts of one run with the same hash (one chance in 2⁶⁴ for a pair) would only be spread
    /// as one: the session's `HostLimiter` counts each by name.
    struct Key: Hashable, Sendable {
        let hash: UInt64

        init(_ host: UnsafeBufferPointer<UInt8>) {
            hash = FNV1a.hash(host, lowercasingASCII: true)
        }

        init(_ host: String) {
            var host = host
            hash = host.withUTF8 { FNV1a.hash($0, lowercasingASCII: true) }
        }
    }

    /// The host in `url`'s authority, lowercased; nil while the authority may go on (`complete`
    /// false and no `/`, `?` or `#` after it yet) or when there is no `://`.
    static func host(inURL url: String, complete: Bool) -> String? {
        var url = url
        return url.withUTF8 { bytes in hostRange(in: bytes, complete: complete).map { lowercased(UnsafeBufferPointer(rebasing: bytes[$0])) } }
    }

    /// `bytes` as text with ASCII letters lowercased (a host name, compared as `URL.host` is).
    static func lowercased(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: bytes.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// `host(inURL:complete:)` as a `Key`, from the URL's bytes.
    static func key(inURL bytes: UnsafeBufferPointer<UInt8>, complete: Bool) -> Key? {
        hostRange(in: bytes, complete: complete).map { Key(UnsafeBufferPointer(start: bytes.baseAddress! + $0.lowerBound, count: $0.count)) }
    }

    /// Where the host is in `bytes`: see `host(inURL:complete:)`. Plain loops over the buffer: this
    /// runs for every job the queue hands out while hosts can be full.
    static func hostRange(in bytes: UnsafeBufferPointer<UInt8>, complete: Bool) -> Range<Int>? {
        guard let scheme = schemeEnd(bytes) else { return nil }
        let start = scheme + 3
        var end = start
        var at: Int?
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte == UInt8(ascii: "@") { at = end }
            end += 1
        }
        if end == bytes.count, !complete { return nil }
        var hostStart = at.map { $0 + 1 } ?? start
        var hostEnd = hostStart
        if hostStart < end, bytes[hostStart] == UInt8(ascii: "[") {
            // An IPv6 literal: the host is what the brackets hold.
            hostStart += 1
            hostEnd = hostStart
            while hostEnd < end, bytes[hostEnd] != UInt8(ascii: "]") { hostEnd += 1 }
            guard hostEnd < end else { return nil }
        } else {
            while hostEnd < end, bytes[hostEnd] != UInt8(ascii: ":") { hostEnd += 1 }
        }
        // Empty, or a placeholder left for later (a capture, filled in when the job starts): unknown.
        guard hostStart < hostEnd else { return nil }
        for index in hostStart..<hostEnd where bytes[index] == UInt8(ascii: "{") { return nil }
        return hostStart..<hostEnd
    }

    /// Where `://` starts, if the text begins with a scheme (a letter, then letters, digits, `+`,
    /// `-` or `.`: RFC 3986 §3.1) followed by it.
    private static func schemeEnd(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        while index + 2 < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: ":") {
                return index > 0 && bytes[index + 1] == UInt8(ascii: "/") && bytes[index + 2] == UInt8(ascii: "/") ? index : nil
            }
            let letter = (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
            let other = (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".")
            guard letter || (index > 0 && other) else { return nil }
            index += 1
        }
        return nil
    }
}
