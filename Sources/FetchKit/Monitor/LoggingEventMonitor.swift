import Logging

/// Forwards events to a swift-log `Logger`, for programs that use FetchKit as a library: the message
/// is the event name (a fixed string), the details are metadata. FetchKit never bootstraps logging;
/// the program chooses the backend.
public struct LoggingEventMonitor: EventMonitor {
    public let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    private func metadata(_ request: RequestInfo) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["method": "\(request.method.rawValue)", "url": "\(request.url)", "attempt": "\(request.attempt)"]
        if let job = request.job { metadata["job"] = "\(job)" }
        return metadata
    }

    public func requestDidResume(_ request: RequestInfo) {
        logger.debug("request.started", metadata: metadata(request))
    }

    public func request(_ request: RequestInfo, didGatherMetrics metrics: RequestMetrics) {
        var metadata = metadata(request)
        metadata["status"] = "\(metrics.status)"
        metadata["bytes"] = "\(metrics.bytes)"
        metadata["duration_ms"] = "\(metrics.duration.milliseconds)"
        if let version = metrics.httpVersion { metadata["http_version"] = "\(version)" }
        logger.info("request.finished", metadata: metadata)
    }

    public func request(_ request: RequestInfo, didFailWithError error: FetchError) {
        var metadata = metadata(request)
        metadata["error"] = "\(error.code.rawValue)"
        metadata["message"] = "\(error.message)"
        logger.warning("request.failed", metadata: metadata)
    }

    public func requestIsRetrying(_ request: RequestInfo, retry: RetryInfo) {
        var metadata = metadata(request)
        metadata["reason"] = "\(retry.reason)"
        metadata["delay_ms"] = "\(retry.delay.milliseconds)"
        logger.warning("request.retrying", metadata: metadata)
    }

    public func authenticatorDidRefresh(service: String, reason: String) {
        logger.info("auth.refreshed", metadata: ["service": "\(service)", "reason": "\(reason)"])
    }

    public func jobDidFinish(_ result: JobResult) {
        var metadata: Logger.Metadata = ["job": "\(result.job)", "outcome": "\(result.outcome.rawValue)"]
        if let error = result.error { metadata["error"] = "\(error.code.rawValue)" }
        if result.outcome == .failed { logger.error("job.finished", metadata: metadata) } else { logger.info("job.finished", metadata: metadata) }
    }
}
