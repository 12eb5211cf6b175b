import Foundation
import NIOCore

/// The run's jobs in plan order (but for jobs set aside for a full host, below), handed to the
/// runner's workers one at a time: a job is ready once
/// every job it `needs` has a result, and skipped (recorded at once) when one of them did not
/// succeed. Workers take ready jobs and report results; a worker waits only while nothing is ready
/// but jobs it could unblock are still running. One lock guards it all, so taking the next job and
/// reporting a result cost no task switch — with thousands of small jobs, a task and a hop to a
/// scheduler per job were a fifth of the runner's own time.
///
/// The written-out jobs come first; then the data files' jobs, made from the feed one at a time as
/// workers ask (a data file's jobs can need written-out jobs, never the reverse). Only the
/// written-out jobs' results are kept (`needs` looks them up); every result is counted in the tally.
///
/// With a `HostSpread` (`per_host` below `concurrency`), a ready job whose host already has
/// `per_host` jobs running is set aside (`JobsAside`) for the next one whose host has room. A
/// worker that finishes a job asks first for the next job set aside for the host it just freed,
/// so it goes on with that host instead of waiting for a busy one while another worker is woken to
/// take its slot. When more than `window` jobs are aside, or nothing else is ready, the longest
/// waiting of them goes anyway (its request then waits in the session's `HostLimiter`).
final class JobQueue: @unchecked Sendable {
    /// How jobs are spread over their hosts: `per_host`, and how far ahead to look past full hosts.
    struct HostSpread {
        var perHost: Int
        var window: Int
    }

    private let jobs: [ExpandedJob]
    private let feed: DataFileFeed?
    /// Whether written-out jobs' results are kept (`results`): for `needs`, a fan-out's sources and
    /// the summary's results in plan order. A batch with none of these keeps none: 20,000 results
    /// were hashed into a dictionary during the run and freed after it, for nothing.
    private let keepsResults: Bool
    private let lock = AdaptiveLock()
    // Guarded by `lock`:
    /// Indices into `jobs`, in order; a started or skipped job's slot becomes `taken`, and `head`
    /// moves past taken slots, so starting jobs in order costs O(1) each.
    private var pending: [Int]
    private var head = 0
    private var pendingCount: Int
    private var running = 0
    private var results: [String: JobResult] = [:]
    private var tally = RunTally()
    /// A data file's job taken from the feed whose needs are not all done yet.
    private var held: ExpandedJob?
    private var stop: RunSummary.Stop?
    private var waiters = CircularBuffer<Waiter>()
    private var lastWaiterID: UInt64 = 0
    private let failFast: Bool
    private let onSkip: @Sendable (JobResult) -> Void
    private let spread: HostSpread?
    /// Jobs handed out and not finished, by host (with a `spread`).
    private var runningByHost: [JobHost.Key: Int] = [:]
    /// Ready jobs passed over because their host was full (with a `spread`).
    private var aside = JobsAside()

    /// Told once, when only `count` written-out jobs are left to start (and no data file feeds
    /// more): the run's stores commit then what they gathered, while the last jobs run.
    private var nearEnd: (count: Int, action: @Sendable () -> Void)?

    private static let taken = -1
    private typealias Waiter = (id: UInt64, continuation: CheckedContinuation<Void, Never>)

    /// - Parameter onSkip: told of each job settled without running (skipped because of its needs,
    ///   or a data file's record that makes no job), as it is settled.
    init(jobs: [ExpandedJob], feed: DataFileFeed? = nil, failFast: Bool, keepsResults: Bool = true, spread: HostSpread? = nil,
         nearEnd: (count: Int, action: @Sendable () -> Void)? = nil, onSkip: @escaping @Sendable (JobResult) -> Void) {
        self.jobs = jobs
        self.nearEnd = feed == nil ? nearEnd : nil
        self.spread = spread
        self.keepsResults = keepsResults
        self.feed = feed
        pending = Array(jobs.indices)
        pendingCount = jobs.count
        if keepsResults { results.reserveCapacity(jobs.count) }
        self.failFast = failFast
        self.onSkip = onSkip
    }

    enum Next {
        /// A job to run, and its host as `spread` counted it (give it back to `finish`).
        case job(ExpandedJob, host: JobHost.Key?)
        /// Nothing is ready, but a running job may make something ready.
        case wait
        /// Nothing is left to start (or the run stopped).
        case done
        /// Results were settled without a job to start (a data file's bad records): report them and ask again.
        case again
    }

    /// The next ready job for a worker, waiting while nothing is ready but jobs are running;
    /// nil when the worker should stop. `host` goes back to `finish` with the job's result, and
    /// to the next call as `after`: the next job set aside for that host comes first.
    func next(after previous: JobHost.Key? = nil) async -> (job: ExpandedJob, host: JobHost.Key?)? {
        while true {
            switch take(preferring: previous) {
            case .job(let job, let host): return (job, host)
            case .done: return nil
            case .wait: await waitForResult()
            case .again: continue
            }
        }
    }

    /// Records a finished job's result. Returns true when the run must stop now (fail_fast), so
    /// the caller can cancel the jobs still running.
    func finish(_ result: JobResult, of job: ExpandedJob, host: JobHost.Key? = nil) -> Bool {
        let (stopsRun, woken) = withLock { () -> (Bool, CircularBuffer<Waiter>?) in
            running -= 1
            if let host, let index = runningByHost.index(forKey: host) {
                if runningByHost.values[index] > 1 { runningByHost.values[index] -= 1 } else { runningByHost.remove(at: index) }
            }
            record(result, kept: !job.isFromDataFile)
            var stopsRun = false
            if result.outcome == .failed, failFast, stop == nil {
                stop = .failFast
                stopsRun = true
            }
            if Task.isCancelled, stop == nil { stop = .interrupted }
            return (stopsRun, takeWaiters())
        }
        if let woken { for waiter in woken { waiter.continuation.resume() } }
        return stopsRun
    }

    /// Stops the run for `reason` unless it already stopped or has nothing left; true when it did.
    func stop(_ reason: RunSummary.Stop) -> Bool {
        let (stopped, woken) = withLock { () -> (Bool, CircularBuffer<Waiter>?) in
            guard stop == nil, running > 0 || hasWorkLeft else { return (false, nil) }
            stop = reason
            return (true, takeWaiters())
        }
        if let woken { for waiter in woken { waiter.continuation.resume() } }
        return stopped
    }

    /// The written-out jobs' results and the tally of every job's, with the jobs never started
    /// recorded as skipped with why (also returned, in plan order, as `notStarted`; a data file's
    /// jobs not started go to `onNotStarted` one at a time, as they are read), and why the run stopped.
    func finalResults(cancelled: Bool, onNotStarted: (JobResult) -> Void = { _ in })
        -> (results: [String: JobResult], tally: RunTally, notStarted: [JobResult], stop: RunSummary.Stop?) {
        withLock {
            if cancelled, stop == nil, hasWorkLeft { stop = .interrupted }
            let reason: String
            switch stop {
            case .failFast?: reason = "not started: fail_fast stopped the run"
            case .maxTime?: reason = "not started: the run reached --max-time"
            case .interrupted?: reason = "not started: the run was interrupted"
            case nil: reason = "not started"
            }
            // The written-out jobs never started, pending or set aside, in plan order.
            var unstarted = pending.filter { $0 != Self.taken }
            for entry in aside.removeAll() {
                if let index = entry.planIndex {
                    unstarted.append(index)
                } else {
                    let result = JobResult(job: entry.job.id, outcome: .skipped, reason: reason)
                    record(result, kept: false)
                    onNotStarted(result)
                }
            }
            var notStarted: [JobResult] = []
            for index in unstarted.sorted() {
                let result = JobResult(job: jobs[index].id, outcome: .skipped, reason: reason)
                record(result, kept: true)
                notStarted.append(result)
            }
            if let job = held {
                held = nil
                let result = JobResult(job: job.id, outcome: .skipped, reason: reason)
                record(result, kept: false)
                onNotStarted(result)
            }
            // A fan-out whose source never ran is skipped as a whole.
            let settledOrSkipped = { (id: String) -> JobResult? in self.results[id] ?? JobResult(job: id, outcome: .skipped) }
            while let item = feed?.next(results: settledOrSkipped) {
                let result: JobResult
                switch item {
                case .job(let job): result = JobResult(job: job.id, outcome: .skipped, reason: reason)
                case .failed(let failed): result = failed
                case .blocked: continue
                }
                record(result, kept: false)
                onNotStarted(result)
            }
            return (results, tally, notStarted, stop)
        }
    }

    // MARK: - Under the lock

    private func take(preferring previous: JobHost.Key?) -> Next {
        var settled: [JobResult] = []
        var nearEndAction: (@Sendable () -> Void)?
        defer { nearEndAction?() }
        let next = withLock { () -> Next in
            // The host the worker just freed: its next job set aside, if it has room.
            if !aside.isEmpty, stop == nil, !Task.isCancelled, let previous, !isFull(previous),
               let entry = aside.take(for: previous) {
                return start(entry.job, host: previous)
            }
            var index = head
            while stop == nil, !Task.isCancelled, index < pending.count {
                guard pending[index] != Self.taken else {
                    index += 1
                    continue
                }
                let planIndex = pending[index]
                let job = jobs[planIndex]
                let needs = job.needs.map { results[$0] }
                if needs.contains(where: { $0 == nil }) {
                    index += 1
                    continue
                }
                pending[index] = Self.taken
                pendingCount -= 1
                if let near = nearEnd, pendingCount <= near.count {
                    nearEndAction = near.action
                    nearEnd = nil
                }
                while head < pending.count, pending[head] == Self.taken { head += 1 }
                if let blocker = Self.blocker(needs) {
                    settled.append(skip(job, blocker))
                    index = head  // a skip may settle other jobs' needs
                    continue
                }
                if let started = startOrSetAside(job, planIndex: planIndex) { return started }
                index += 1
            }
            // Then the data files' jobs, one held back at a time while its needs run. A file of bad
            // records is reported a batch at a time, not gathered whole under the lock.
            while stop == nil, !Task.isCancelled {
                if settled.count >= Self.settledBatch { return .again }
                let job: ExpandedJob
                if let waiting = held {
                    job = waiting
                } else if let item = feed?.next(results: { results[$0] }) {
                    if case .job(let made) = item {
                        job = made
                    } else if case .failed(let result) = item {
                        record(result, kept: false)
                        settled.append(result)
                        continue
                    } else {
                        break  // a fan-out waiting for its source jobs
                    }
                } else {
                    break
                }
                let needs = job.needs.map { results[$0] }
                if needs.contains(where: { $0 == nil }) {
                    held = job
                    break
                }
                held = nil
                if let blocker = Self.blocker(needs) {
                    settled.append(skip(job, blocker))
                    continue
                }
                if let started = startOrSetAside(job, planIndex: nil) { return started }
            }
            // Nothing else ready: a job set aside goes, one whose host has room first.
            if stop == nil, !Task.isCancelled, let (host, entry) = aside.takeFirst(where: { !isFull($0) }, orOldest: true) {
                return start(entry.job, host: host)
            }
            if stop == nil, !Task.isCancelled, hasWorkLeft, running > 0 { return .wait }
            return .done
        }
        for result in settled { onSkip(result) }
        if !settled.isEmpty { wakeAll() }  // a skip may have made jobs ready for others
        return next
    }

    /// Hands out a ready `job` whose host has room (or that has no spread to respect); sets it
    /// aside when its host is full, and then hands out the longest waiting job set aside if more
    /// than `window` are (under the lock). nil when it set the job aside and handed out none.
    private func startOrSetAside(_ job: consuming ExpandedJob, planIndex: Int?) -> Next? {
        guard let spread, let host = job.firstRequestHost else { return start(job, host: nil) }
        guard isFull(host) else { return start(job, host: host) }
        aside.add(job, planIndex: planIndex, host: host)
        guard aside.count > spread.window, let (oldestHost, oldest) = aside.takeFirst(where: { !isFull($0) }, orOldest: true) else { return nil }
        return start(oldest.job, host: oldestHost)
    }

    /// Hands `job` out (under the lock), counting it against `host`.
    private func start(_ job: consuming ExpandedJob, host: JobHost.Key?) -> Next {
        running += 1
        if let host { runningByHost[host, default: 0] += 1 }
        return .job(job, host: host)
    }

    /// Whether `host` has `per_host` jobs running (under the lock).
    private func isFull(_ host: JobHost.Key) -> Bool {
        guard let spread, !runningByHost.isEmpty else { return false }
        return runningByHost[host, default: 0] >= spread.perHost
    }

    /// Results settled in one `take` before they are reported.
    private static let settledBatch = 256

    /// The first of `needs` that did not succeed.
    private static func blocker(_ needs: [JobResult?]) -> JobResult? {
        needs.compactMap { $0 }.first { !$0.isSuccess }
    }

    /// Records `job` as skipped because `blocker` did not succeed (under the lock).
    private func skip(_ job: ExpandedJob, _ blocker: JobResult) -> JobResult {
        let result = JobResult(job: job.id, outcome: .skipped,
                               reason: "needs \(blocker.job), which \(blocker.outcome == .skipped ? "was skipped" : "failed")")
        record(result, kept: !job.isFromDataFile)
        return result
    }

    /// Counts a result, and keeps it (`kept`) when a written-out job's, which `needs` may name; a
    /// data file's jobs' results are only counted (under the lock).
    private func record(_ result: JobResult, kept: Bool) {
        tally.add(result)
        if kept, keepsResults { results[result.job] = result }
    }

    /// Jobs not yet started or settled remain (under the lock).
    private var hasWorkLeft: Bool { pendingCount > 0 || held != nil || !aside.isEmpty || !(feed?.isEmpty ?? true) }

    private func waitForResult() async {
        let id = withLock { () -> UInt64 in
            lastWaiterID += 1
            return lastWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = withLock { () -> Bool in
                    // Re-check: a result may have come in since `take` said to wait.
                    if Task.isCancelled || stop != nil || running == 0 || hasReadyJob() { return true }
                    waiters.append((id, continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = withLock { () -> CheckedContinuation<Void, Never>? in
                guard let position = waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return waiters.remove(at: position).continuation
            }
            waiter?.resume()
        }
    }

    /// Whether `take` would find a job (or a skip) now.
    private func hasReadyJob() -> Bool {
        if !aside.isEmpty { return true }
        if let job = held, job.needs.allSatisfy({ results[$0] != nil }) { return true }
        if held == nil, let feed, feed.canAdvance(results: { results[$0] }) { return true }
        var index = head
        while index < pending.count {
            if pending[index] != Self.taken, jobs[pending[index]].needs.allSatisfy({ results[$0] != nil }) { return true }
            index += 1
        }
        return false
    }

    private func wakeAll() {
        if let woken = withLock({ takeWaiters() }) { for waiter in woken { waiter.continuation.resume() } }
    }

    /// Empties the waiters (under the lock); nil, with nothing allocated, when there are none (most runs).
    private func takeWaiters() -> CircularBuffer<Waiter>? {
        guard !waiters.isEmpty else { return nil }
        defer { waiters.removeAll() }
        return waiters
    }

    private func withLock<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}
