import Foundation

/// `fetchctl run`'s transport made while its jobs file loads: from the settings as soon as they
/// are read, and the first job's connection opened with it as soon as that job is made, while
/// the rest of the file is still expanded and checked (`RunPrefetch`).
///
/// The first connection of a process is slow to set up, whatever the server: the event loop meets
/// NIO's channel, pipeline and handler types for the first time (the Swift runtime scans its
/// conformance records for each), about 7 ms of two threads on this machine. Opened after the
/// load, those milliseconds came before the first request; opened during it, they overlap the
/// load on the other core.
///
/// A preconnect sends nothing: it is a TCP connection (and, for HTTPS, a handshake), which a jobs
/// file that turns out to be invalid closes again unused, as `--offline` never opens one. The run
/// takes the transport (`take`); a run that ends before (a bad config, a held lock) or asked for
/// something else shuts it down (`discardUnlessTaken`).
final class EarlyTransport: Sendable {
    private let state = LockedBox<(transport: (any HTTPTransport)?, taken: Bool)>((nil, false))

    /// Makes the transport from the jobs file's settings, unless the environment asks for another
    /// HTTP client than the default (`FETCHCTL_HTTP_CLIENT`) or its proxies can't be read: the
    /// run then makes its own, and reports the problem, as it would without this.
    func settingsRead(_ settings: Settings, environment: [String: String]) {
        guard (environment["FETCHCTL_HTTP_CLIENT"] ?? "").isEmpty,
              let proxies = try? RunInvocation.proxies(settings, environment: environment) else { return }
        let transport = Runner.makeTransport(settings: settings, proxies: proxies, client: .fetchKit)
        let unwanted = state.withLock { state -> (any HTTPTransport)? in
            guard state.transport == nil, !state.taken else { return transport }
            state.transport = transport
            return nil
        }
        if let unwanted { Task { try? await unwanted.shutdown() } }
    }

    /// Opens the first job's connection (on an event loop: the caller goes on loading).
    func firstJobMade(_ job: ExpandedJob) {
        guard let transport = state.withLock({ $0.taken ? nil : $0.transport }),
              let request = try? job.router.makeRequest() else { return }
        transport.preconnect(for: request, options: TransportOptions(tls: job.behaviour.tls))
    }

    /// The transport, for the run to use and shut down; nil if none was made.
    func take() -> (any HTTPTransport)? {
        state.withLock { state in
            state.taken = true
            defer { state.transport = nil }
            return state.transport
        }
    }

    /// Shuts the transport down unless the run took it.
    func discardUnlessTaken() async {
        if let left = take() { try? await left.shutdown() }
    }
}
