import Foundation

/// An OAuth2 access token and when it expires.
public struct OAuth2Credential: AuthenticationCredential {
    public var accessToken: String
    public var refreshToken: String?
    public var obtainedAt: ContinuousClock.Instant
    public var lifetime: Duration?

    /// Refreshed when less than a tenth of its lifetime (at most 60 s) is left.
    public var requiresRefresh: Bool {
        guard let lifetime else { return false }
        let margin = min(lifetime / 10, .seconds(60))
        return ContinuousClock.now >= obtainedAt + lifetime - margin
    }
}

/// Fetches tokens from an OAuth2 token endpoint (RFC 6749 §4.4 client credentials, §6 refresh) for
/// `auth: {oauth2: …}` and sends them as `Authorization: Bearer`. The token request goes through the
/// same session (per-host limits apply) without interceptors.
public struct OAuth2Authenticator: Authenticator {
    public let options: OAuth2Options
    private let session: Session

    public init(options: OAuth2Options, session: Session) {
        self.options = options
        self.session = session
    }

    public func apply(_ credential: OAuth2Credential, to request: inout BuiltRequest) {
        request.headers.update(name: "Authorization", value: "Bearer \(credential.accessToken)")
    }

    public func didRequest(_ request: BuiltRequest, with response: TransportResponseHead, failDueToAuthenticationError error: FetchError) -> Bool {
        response.status == 401
    }

    public func isRequest(_ request: BuiltRequest, authenticatedWith credential: OAuth2Credential) -> Bool {
        request.headers["Authorization"] == "Bearer \(credential.accessToken)"
    }

    public func refresh(_ credential: OAuth2Credential?) async throws -> OAuth2Credential {
        guard let url = URL(string: options.tokenURL), url.host != nil else {
            throw FetchError(.auth, "auth.oauth2.token_url '\(options.tokenURL)' is not a URL")
        }
        var form: [(String, String)] = [("client_id", options.clientID)]
        if let refreshToken = credential?.refreshToken ?? options.refreshToken, options.grant == .refreshToken || credential?.refreshToken != nil {
            form.insert(("grant_type", "refresh_token"), at: 0)
            form.append(("refresh_token", refreshToken))
        } else {
            form.insert(("grant_type", "client_credentials"), at: 0)
        }
        if let secret = options.clientSecret { form.append(("client_secret", secret)) }
        if let scope = options.scope { form.append(("scope", scope)) }
        let encoder = URLEncodedFormEncoder()
        let body = form.map { "\(encoder.escape($0.0))=\(encoder.escape($0.1))" }.joined(separator: "&")
        let request = BuiltRequest(method: .post, url: url,
                                   headers: HTTPHeaders([("User-Agent", Router.defaultUserAgent), ("Accept", "application/json"),
                                                         ("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")]),
                                   body: .data(Data(body.utf8)))
        let response: DataResponse
        do {
            response = try await session.data(request, options: RequestOptions(retryPolicy: nil))
        } catch var error as FetchError {
            error.message = "the OAuth2 token request failed: \(error.message)"
            error.code = error.code == .status ? .auth : error.code
            throw error
        }
        guard let object = try? JSONSerialization.jsonObject(with: response.data) as? [String: Any],
              let token = object["access_token"] as? String, !token.isEmpty else {
            throw FetchError(.auth, "the OAuth2 token response has no access_token", url: session.redactor.redact(options.tokenURL))
        }
        let expiresIn = (object["expires_in"] as? NSNumber)?.doubleValue ?? (object["expires_in"] as? String).flatMap(Double.init)
        return OAuth2Credential(accessToken: token, refreshToken: object["refresh_token"] as? String ?? credential?.refreshToken,
                                obtainedAt: .now, lifetime: expiresIn.map { .seconds($0) })
    }
}
