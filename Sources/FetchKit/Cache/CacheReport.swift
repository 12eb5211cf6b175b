import Foundation

/// What `fetchctl cache stats` and `fetchctl cache list` print, as text for people or JSON.
public enum CacheReport {
    public static func stats(_ stats: CacheStatistics, directory: String, json: Bool) -> String {
        if json {
            var object = "{\"directory\":\(quote(directory)),\"entries\":\(stats.entries),\"bytes\":\(stats.bytes)"
            object += ",\"oldest\":" + (stats.oldest.map { quote(LogFormatting.timestamp($0)) } ?? "null")
            if let run = stats.lastRun {
                object += ",\"last_run\":{\"run_id\":\(quote(run.runID)),\"hits\":\(run.hits),\"revalidated\":\(run.revalidated)"
                object += ",\"stale\":\(run.stale),\"misses\":\(run.misses),\"hit_ratio\":\(String(format: "%.4f", run.hitRatio))}"
            } else {
                object += ",\"last_run\":null"
            }
            return object + "}\n"
        }
        var out = "cache:    \(directory)\n"
        out += "entries:  \(stats.entries) (\(bytes(stats.bytes)))\n"
        if let oldest = stats.oldest { out += "oldest:   \(LogFormatting.timestamp(oldest))\n" }
        if let run = stats.lastRun {
            out += "last run: \(run.runID): \(run.hits) hit\(run.hits == 1 ? "" : "s"), \(run.revalidated) revalidated, \(run.stale) stale, "
            out += "\(run.misses) miss\(run.misses == 1 ? "" : "es") (hit ratio \(Int((run.hitRatio * 100).rounded()))%)\n"
        }
        return out
    }

    public static func list(_ entries: [CacheListing], json: Bool, now: Date = Date()) -> String {
        if json {
            let items = entries.map { e in
                "{\"method\":\(quote(e.method)),\"url\":\(quote(e.url)),\"status\":\(e.status),\"bytes\":\(e.bytes)"
                    + ",\"stored_at\":\(quote(LogFormatting.timestamp(e.storedAt))),\"used_at\":\(quote(LogFormatting.timestamp(e.usedAt)))"
                    + ",\"hits\":\(e.hits),\"fresh\":\(isFresh(e, now: now))}"
            }
            return "[" + items.joined(separator: ",\n ") + "]\n"
        }
        var out = ""
        for e in entries {
            let state = isFresh(e, now: now) ? "fresh" : "stale"
            out += "\(e.method) \(e.status) \(bytes(e.bytes).padding(toLength: 10, withPad: " ", startingAt: 0)) \(state)  \((String(e.hits) + (e.hits == 1 ? " hit" : " hits")).padding(toLength: 9, withPad: " ", startingAt: 0))  \(e.url)\n"
        }
        return out.isEmpty ? "no stored responses\n" : out
    }

    static func isFresh(_ e: CacheListing, now: Date) -> Bool {
        let freshness = CacheFreshness(status: e.status, headers: e.headers, requestTime: e.requestTime, responseTime: e.responseTime,
                                       heuristic: false, ttl: e.ttl, invalidated: e.invalidated)
        return freshness.isFresh(now: now)
    }

    /// A JSON string, `/` unescaped (as the JSON log writes URLs and paths).
    private static func quote(_ s: String) -> String { JSONText.quote(s, escapeSlash: false) }

    /// `1.5 MiB`, `512 B` (as the log writes sizes).
    public static func bytes(_ count: Int64) -> String { LogFormatting.bytes(count) }
}
