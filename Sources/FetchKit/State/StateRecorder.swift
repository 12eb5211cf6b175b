/// Writes a run and its jobs' results to the state store as they happen. Job results are queued on
/// the store's writer (one small transaction each) so the transfer path never waits for SQLite.
public final class StateRecorder: EventMonitor {
    private let store: StateStore
    private let jobsFile: String
    private let runID = LockedBox<String?>(nil)

    public init(store: StateStore, jobsFile: String) {
        self.store = store
        self.jobsFile = jobsFile
    }

    public func runDidStart(_ run: RunInfo) {
        runID.withLock { $0 = run.id }
        try? store.beginRun(id: run.id, jobsFile: jobsFile, jobs: run.jobs)
    }

    public func jobDidFinish(_ result: JobResult) {
        guard let id = runID.withLock({ $0 }) else { return }
        store.recordJobLater(runID: id, result)
    }
}
