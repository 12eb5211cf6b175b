/// Hides secrets in anything fetchctl prints: credential headers, URL userinfo, and every value that
/// came from a secret-named `${VAR}` or an `auth` block (SPEC §4).
public struct Redactor: Sendable {
    public static let placeholder = "<redacted>"

    /// Header names whose values are always hidden (lowercased).
    public static let alwaysSecretHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// Secret values, longest first so a secret containing another is hidden whole.
    public let secrets: [String]
    /// Extra header names to hide (e.g. an `auth: {header: …}` name), lowercased.
    public let secretHeaders: Set<String>

    /// False only for `--show-secrets`.
    public let isEnabled: Bool
    /// Secrets learnt during the run (secret captures), shared by every copy of this redactor.
    let learnt: SecretValues?

    public init(secrets: some Sequence<String> = [], secretHeaders: some Sequence<String> = [String](), learnt: SecretValues? = nil) {
        self.learnt = learnt
        // Each secret also as it appears once escaped into a query string or a path.
        var forms: Set<String> = []
        for secret in secrets.flatMap(Self.withoutUnsetMarkers) where !secret.isEmpty {
            forms.insert(secret)
            for encoder in [URLEncodedFormEncoder(), URLEncodedFormEncoder(spaceEncoding: .plusReplaced)] {
                forms.insert(encoder.escape(secret))
            }
            if let path = secret.addingPercentEncoding(withAllowedCharacters: Router.pathSegmentAllowed) { forms.insert(path) }
        }
        self.secrets = forms.sorted { $0.count > $1.count || ($0.count == $1.count && $0 < $1) }
        self.secretHeaders = Set(secretHeaders.map { $0.lowercased() }).union(Self.alwaysSecretHeaders)
        self.isEnabled = true
    }

    private init(disabled: Void) {
        learnt = nil
        secrets = []
        secretHeaders = []
        isEnabled = false
    }

    /// A redactor that hides nothing (for `--show-secrets`).
    public static let none = Redactor(disabled: ())

    public func isSecretHeader(_ name: String) -> Bool { isEnabled && secretHeaders.contains(name.lowercased()) }

    /// The value to show for header `name`.
    public func headerValue(name: String, value: String) -> String {
        guard isSecretHeader(name) else { return redact(value) }
        // A dry run's `<unset: NAME>` markers say which variables are missing; the rest of the
        // value may be a secret all the same (a cookie with one part unset), so it stays hidden.
        let markers = Self.unsetMarkers(in: value)
        return markers.isEmpty ? Self.placeholder : ([Self.placeholder] + markers).joined(separator: " ")
    }

    /// The `<unset: NAME>` markers in `text`, in order.
    static func unsetMarkers(in text: String) -> [String] {
        var found: [String] = []
        var rest = Substring(text)
        while let start = rest.range(of: "<unset: "), let end = rest[start.upperBound...].firstIndex(of: ">") {
            found.append(String(rest[start.lowerBound...end]))
            rest = rest[rest.index(after: end)...]
        }
        return found
    }

    /// A dry run's value with `<unset: NAME>` in place of a missing variable: the marker is no
    /// secret (and says what to set), the text around it may be.
    static func withoutUnsetMarkers(_ secret: String) -> [String] {
        guard secret.contains("<unset: ") else { return [secret] }
        var pieces: [String] = []
        var rest = Substring(secret)
        while let start = rest.range(of: "<unset: ") {
            pieces.append(String(rest[..<start.lowerBound]))
            guard let end = rest[start.upperBound...].firstIndex(of: ">") else { return pieces.filter { $0.count >= 4 } }
            rest = rest[rest.index(after: end)...]
        }
        pieces.append(String(rest))
        // Separators between variables ('.', '-', ' ') are no secret, and would garble every line.
        return pieces.filter { $0.count >= 4 }
    }

    /// `text` with every secret value and URL userinfo replaced by `<redacted>`.
    public func redact(_ text: String) -> String {
        guard isEnabled else { return text }
        var out = Self.redactURLUserinfo(text)
        for secret in secrets where out.contains(secret) {
            out = out.replacingOccurrences(of: secret, with: Self.placeholder)
        }
        if let learnt {
            for secret in learnt.values where out.contains(secret) {
                out = out.replacingOccurrences(of: secret, with: Self.placeholder)
            }
        }
        return out
    }

    /// `https://user:pass@host/…` → `https://<redacted>@host/…`, wherever a URL appears in `text`.
    public static func redactURLUserinfo(_ text: String) -> String {
        // Most text has no `@` at all: a byte scan answers that without Foundation's string search.
        guard UTF8Text.contains(UInt8(ascii: "@"), in: text), text.contains("://") else { return text }
        var out = ""
        var rest = Substring(text)
        while let scheme = rest.range(of: "://") {
            out += rest[..<scheme.upperBound]
            rest = rest[scheme.upperBound...]
            let authorityEnd = rest.firstIndex { "/?# \"'\n".contains($0) } ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            if let at = authority.lastIndex(of: "@") {
                out += placeholder + "@" + authority[authority.index(after: at)...]
            } else {
                out += authority
            }
            rest = rest[authorityEnd...]
        }
        return out + rest
    }
}

import Foundation
