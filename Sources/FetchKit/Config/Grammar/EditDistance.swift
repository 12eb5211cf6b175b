/// "Did you mean" suggestions by Levenshtein distance.
public enum EditDistance {
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased()), b = Array(b.lowercased())
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }

    /// The closest candidate within a distance of a third of the word's length (at least 2), if any.
    public static func suggestion(for word: String, among candidates: some Sequence<String>) -> String? {
        let limit = max(2, word.count / 3)
        var best: (String, Int)?
        for candidate in candidates {
            let d = distance(word, candidate)
            if d <= limit, d < (best?.1 ?? Int.max) { best = (candidate, d) }
        }
        return best?.0
    }

    /// `did you mean 'x'?` for the closest candidate, or nil.
    public static func hint(for word: String, among candidates: some Sequence<String>) -> String? {
        suggestion(for: word, among: candidates).map { "did you mean '\($0)'?" }
    }
}
