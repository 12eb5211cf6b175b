/// A set of HTTP status codes: `200`, `"2xx"`, `"200-299"`, or a list of those.
public struct StatusSet: Sendable, Equatable, CustomStringConvertible {
    public var ranges: [ClosedRange<Int>]

    public init(_ ranges: [ClosedRange<Int>]) {
        self.ranges = ranges
    }

    public static let success = StatusSet([200...299])

    public func contains(_ status: Int) -> Bool {
        ranges.contains { $0.contains(status) }
    }

    /// Parses one element (`404`, `"2xx"`, `"200-299"`); nil when it is not one or leaves 100–599.
    public static func parseElement(_ text: String) -> ClosedRange<Int>? {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        if t.count == 3, t.hasSuffix("xx"), let digit = Int(t.prefix(1)), (1...5).contains(digit) {
            return (digit * 100)...(digit * 100 + 99)
        }
        if let dash = t.firstIndex(of: "-") {
            guard let low = Int(t[..<dash]), let high = Int(t[t.index(after: dash)...]),
                  low <= high, (100...599).contains(low), (100...599).contains(high) else { return nil }
            return low...high
        }
        guard let code = Int(t), (100...599).contains(code) else { return nil }
        return code...code
    }

    public var description: String {
        ranges.map { r -> String in
            if r.count == 100, r.lowerBound % 100 == 0 { return "\(r.lowerBound / 100)xx" }
            return r.count == 1 ? "\(r.lowerBound)" : "\(r.lowerBound)-\(r.upperBound)"
        }.joined(separator: ", ")
    }
}

/// An expected digest of a download: `sha256:<64 hex>` or `sha512:<128 hex>`.
public struct Checksum: Sendable, Equatable, CustomStringConvertible {
    public enum Algorithm: String, Sendable, CaseIterable {
        case sha256, sha512

        var hexLength: Int { self == .sha256 ? 64 : 128 }
    }

    public var algorithm: Algorithm
    /// Lowercase hex.
    public var hex: String

    public static func parse(_ text: String) -> Checksum? {
        let parts = text.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let algorithm = Algorithm(rawValue: parts[0].lowercased()) else { return nil }
        let hex = parts[1].lowercased()
        guard hex.count == algorithm.hexLength, hex.allSatisfy({ $0.isHexDigit }) else { return nil }
        return Checksum(algorithm: algorithm, hex: hex)
    }

    public var description: String { "\(algorithm.rawValue):\(hex)" }
}
