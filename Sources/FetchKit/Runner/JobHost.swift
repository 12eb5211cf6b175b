/// The host a job's first request goes to, read from its URL's text before the request is built:
/// what `JobQueue` spreads jobs over when `per_host` can make one wait. Lowercased, without the
/// port or any userinfo, as `Session` keys `per_host`'s slots (`URL.host`). nil when the URL's
/// text doesn't say (a placeholder with no value, no `://`): such a job is handed out in order.
///
/// Only the URL's start is rendered, up to the end of its authority; a URL whose host is written
/// out renders no placeholder at all. An interceptor that changes the host, or a redirect, is not
/// foreseen: the session's `HostLimiter` still holds every request to `per_host`.
extension ExpandedJob {
    var firstRequestHost: String? {
        // Gathered as bytes into one buffer, looked at after each part: this runs for every job
        // the queue hands out while hosts can be full.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        for part in route.urlParts.path.parts {
            switch part {
            case .literal(let literal):
                UTF8Text.append(literal, to: &bytes)
            case .placeholder(let name):
                guard let value = bindings[name] ?? matrixValue(name) ?? params[name] else { return nil }
                UTF8Text.append(value.text, to: &bytes)
            }
            if let host = JobHost.host(inURL: bytes, complete: false) { return host }
        }
        return JobHost.host(inURL: bytes, complete: true)
    }

    /// `{{matrix.key}}`'s value, as `router` binds it.
    private func matrixValue(_ name: String) -> ParameterValue? {
        guard !matrix.isEmpty, name.hasPrefix("matrix.") else { return nil }
        let key = name.dropFirst("matrix.".count)
        return matrix.first { $0.key == key }?.value
    }
}

enum JobHost {
    /// The host in `url`'s authority; nil while the authority may go on (`complete` false and no
    /// `/`, `?` or `#` after it yet) or when there is no `://`.
    static func host(inURL url: String, complete: Bool) -> String? {
        host(inURL: Array(url.utf8), complete: complete)
    }

    /// `host(inURL:complete:)` for the URL's bytes.
    static func host(inURL bytes: [UInt8], complete: Bool) -> String? {
        guard let scheme = schemeEnd(bytes) else { return nil }
        let start = scheme + 3
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"), bytes[end] != UInt8(ascii: "#") { end += 1 }
        if end == bytes.count, !complete { return nil }
        var hostStart = start
        if let at = bytes[start..<end].lastIndex(of: UInt8(ascii: "@")) { hostStart = at + 1 }
        var hostEnd = end
        if hostStart < end, bytes[hostStart] == UInt8(ascii: "[") {
            // An IPv6 literal: the host is what the brackets hold.
            guard let close = bytes[hostStart..<end].firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostStart += 1
            hostEnd = close
        } else if let colon = bytes[hostStart..<end].firstIndex(of: UInt8(ascii: ":")) {
            hostEnd = colon
        }
        // Empty, or a placeholder left for later (a capture, filled in when the job starts): unknown.
        guard hostStart < hostEnd, !bytes[hostStart..<hostEnd].contains(UInt8(ascii: "{")) else { return nil }
        // ASCII letters lowercased, byte by byte; anything else as written. Only the grouping of
        // jobs by host depends on it: the session's `HostLimiter` holds every request either way.
        return String(decoding: bytes[hostStart..<hostEnd].map { $0 >= 65 && $0 <= 90 ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// Where `://` starts, if the text has one before any `/`, `?` or `#`.
    private static func schemeEnd(_ bytes: [UInt8]) -> Int? {
        var index = 0
        while index + 2 < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: ":") { return bytes[index + 1] == UInt8(ascii: "/") && bytes[index + 2] == UInt8(ascii: "/") ? index : nil }
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { return nil }
            index += 1
        }
        return nil
    }
}
