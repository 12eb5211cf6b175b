#!/usr/bin/env python3
"""Generate schemas/routes.schema.json and schemas/jobs.schema.json.

Both schemas are built from the definitions below, so the keys they share (the
route-file keys, the behaviour blocks) cannot drift apart. Each output file is
self-contained: it carries the `$defs` it uses and nothing else.

The output is deterministic (Python dicts keep insertion order, json.dumps with
a fixed indent and ASCII escaping), so CI can regenerate and diff:

    python3 schemas/generate.py            # write both files
    python3 schemas/generate.py --check    # exit 1 if either file is stale

The fetchctl binary embeds both files byte for byte as SwiftPM resources
(`.embedInCode`, target FetchKitSchemas), so `fetchctl schema routes|jobs` prints
exactly these files.
"""

import json
import os
import sys

DRAFT = "https://json-schema.org/draft/2020-12/schema"
BASE_ID = "https://fetchctl.dev/schemas/"

# --------------------------------------------------------------------------
# Grammars. Every constrained string also accepts one whole-value `${VAR}`
# reference (`${VAR}`, `${VAR:-default}`, `${VAR:?message}`), which is
# resolved at load time and checked again by the loader.
# --------------------------------------------------------------------------

ENV = r"\$\{[^}]+\}"
DURATION = r"[0-9]+(\.[0-9]+)?(ms|s|m|h|d)?"
RATE = r"[0-9]+/([0-9]+)?(ms|s|m|h)"
SIZE = r"[0-9]+(\.[0-9]+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)?"
STATUS = r"[1-5]xx|[1-5][0-9]{2}(-[1-5][0-9]{2})?"
CHECKSUM = r"sha256:[0-9A-Fa-f]{64}|sha512:[0-9A-Fa-f]{128}"
PIN = r"sha256//?[A-Za-z0-9+/]{43}="
HTTP_URL = r"https?://[^\s/?#]+\S*"
MEDIA_TYPE = r"[^\s/;]+/[^\s/;]+(\s*;.*)?"

SERVICE_NAME = r"^[A-Za-z][A-Za-z0-9_-]*$"
ROUTE_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
PARAM_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
JOB_ID = r"^[A-Za-z0-9_.-]+$"
ROUTE_REF = r"^[A-Za-z][A-Za-z0-9_-]*\.[A-Za-z_][A-Za-z0-9_]*$"
HEADER_NAME = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"
HOST = r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(:[0-9]{1,5})?$"

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "QUERY"]


def with_env(pattern):
    """Anchor a grammar and let a whole-value ${VAR} stand in for it."""
    return "^(" + pattern + "|" + ENV + ")$"


def ref(name, description):
    return {"$ref": "#/$defs/" + name, "description": description}


def enum_or_env(values, description, default=None):
    schema = {"description": description}
    if default is not None:
        schema["default"] = default
    schema["anyOf"] = [
        {"type": "string", "enum": values},
        {"$ref": "#/$defs/env_ref"},
    ]
    return schema


def string(description, **extra):
    schema = {"type": "string", "description": description}
    schema.update(extra)
    return schema


def boolean(description, default=None):
    schema = {"type": "boolean", "description": description}
    if default is not None:
        schema["default"] = default
    return schema


def obj(description, properties, required=None, **extra):
    schema = {"type": "object", "description": description}
    if required:
        schema["required"] = required
    schema["properties"] = properties
    schema["additionalProperties"] = False
    schema.update(extra)
    return schema


# --------------------------------------------------------------------------
# $defs
# --------------------------------------------------------------------------

DEFS = {}

DEFS["env_ref"] = {
    "type": "string",
    "description": "A whole-value environment reference: ${VAR}, ${VAR:-default} or ${VAR:?message}. Resolved when the file is loaded; the result must then fit the key's grammar.",
    "pattern": "^" + ENV + "$",
}

DEFS["version"] = {
    "type": "integer",
    "description": "File format version. Must be 1.",
    "const": 1,
}

DEFS["duration"] = {
    "description": "A duration: a number with a unit (250ms, 30s, 5m, 1h, 1d, 1.5s) or a bare number of seconds (30, 0.25).",
    "anyOf": [
        {"type": "number", "minimum": 0},
        {"type": "string", "pattern": with_env(DURATION)},
    ],
}

DEFS["rate"] = {
    "type": "string",
    "description": "A request rate: COUNT/UNIT or COUNT/NUMBERUNIT, e.g. 10/s, 600/m, 5/15s (5 requests per 15 seconds).",
    "pattern": with_env(RATE),
}

DEFS["size"] = {
    "description": "A size in bytes: a bare integer, or a number with a unit B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. 512KiB, 10MB.",
    "anyOf": [
        {"type": "integer", "minimum": 0},
        {"type": "string", "pattern": with_env(SIZE)},
    ],
}

DEFS["status"] = {
    "description": "One HTTP status or status range: an integer 100-599, a class such as \"2xx\", a range such as \"200-299\", or a single code as a string such as \"404\".",
    "anyOf": [
        {"type": "integer", "minimum": 100, "maximum": 599},
        {"type": "string", "pattern": with_env(STATUS)},
    ],
}

DEFS["status_set"] = {
    "description": "A set of HTTP statuses: one status, class or range (200, \"2xx\", \"200-299\") or a list of them.",
    "anyOf": [
        {"$ref": "#/$defs/status"},
        {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": "#/$defs/status"},
        },
    ],
}

DEFS["checksum"] = {
    "type": "string",
    "description": "Expected digest of the downloaded file: sha256:<64 hex digits> or sha512:<128 hex digits>.",
    "pattern": with_env(CHECKSUM),
}

DEFS["method"] = enum_or_env(
    METHODS,
    "HTTP method.",
)

DEFS["headers"] = {
    "type": "object",
    "description": "Request headers by name. Merged by name (case-insensitive) across layers; null removes a header set by an outer layer.",
    "propertyNames": {"pattern": HEADER_NAME},
    "additionalProperties": {
        "description": "Header value (a number or boolean is sent as written), or null to remove an inherited header.",
        "type": ["string", "number", "boolean", "null"],
    },
}

DEFS["timeout"] = obj(
    "Timeouts. Unset keys inherit from the next layer out.",
    {
        "connect": ref("duration", "Time allowed to establish the connection (DNS, TCP, TLS). Default 30s."),
        "read": ref("duration", "Longest wait for the next bytes of the response (idle timeout). Default 60s."),
        "total": ref("duration", "Time allowed for one whole attempt, including the body. Unset: no limit."),
    },
)

DEFS["retry"] = obj(
    "Retry policy, after Alamofire's RetryPolicy. Merged key by key with the outer layers.",
    {
        "limit": {
            "type": "integer",
            "description": "Retries after the first attempt (0 disables retrying).",
            "minimum": 0,
            "default": 2,
        },
        "backoff": obj(
            "Exponential backoff: delay = min(max, scale * base^n), then jittered.",
            {
                "base": {
                    "type": "number",
                    "description": "Exponential base.",
                    "minimum": 1,
                    "default": 2,
                },
                "scale": ref("duration", "Delay before the first retry (n = 0). Default 0.5s."),
                "max": ref("duration", "Upper bound on a single delay. Default 30s."),
                "jitter": enum_or_env(
                    ["full", "equal", "none"],
                    "Randomisation of each delay: full = uniform in [0, d], equal = d/2 + uniform in [0, d/2], none = exactly d.",
                    default="full",
                ),
            },
        ),
        "methods": {
            "type": "array",
            "description": "Methods that may be retried. Default: the idempotent ones, GET HEAD PUT DELETE OPTIONS TRACE.",
            "uniqueItems": True,
            "items": {"$ref": "#/$defs/method"},
        },
        "statuses": ref("status_set", "Response statuses that are retried. Default [408, 429, 500, 502, 503, 504]."),
        "errors": {
            "type": "array",
            "description": "Transport failures that are retried. Default: all of them.",
            "uniqueItems": True,
            "items": enum_or_env(
                ["timeout", "connection", "dns", "tls_handshake", "truncated", "proxy"],
                "A transport failure class.",
            ),
        },
        "retry_after": obj(
            "Handling of the Retry-After response header (seconds or HTTP-date).",
            {
                "honor": boolean("Wait as long as Retry-After asks, instead of the backoff delay.", default=True),
                "max": ref("duration", "Never wait longer than this for one Retry-After. Default 2m."),
            },
        ),
        "budget": ref("duration", "Give up when the next delay would take the job's total retry time past this. Default 10m."),
    },
)

DEFS["cache"] = obj(
    "Response cache, after URLRequest.CachePolicy and Alamofire's ResponseCacher. Only GET and HEAD are cached; downloads never are.",
    {
        "policy": enum_or_env(
            ["protocol", "return_cache_else_load", "return_cache_dont_load", "reload"],
            "How the cache is consulted: protocol (RFC 9111 freshness and revalidation), return_cache_else_load, return_cache_dont_load (offline only), reload (ignore stored responses).",
            default="protocol",
        ),
        "behavior": {
            "description": "What is stored: cache, do_not_cache, or {modify: {...}} to store a changed response.",
            "default": "cache",
            "anyOf": [
                {"type": "string", "enum": ["cache", "do_not_cache"]},
                {"$ref": "#/$defs/env_ref"},
                obj(
                    "Store a modified copy of the response.",
                    {
                        "modify": obj(
                            "Changes applied before the response is stored.",
                            {
                                "ttl": ref("duration", "Freshness lifetime to store, replacing the response's own."),
                                "strip_headers": {
                                    "type": "array",
                                    "description": "Response headers not to store (e.g. Set-Cookie).",
                                    "uniqueItems": True,
                                    "items": {
                                        "type": "string",
                                        "description": "A header name.",
                                        "pattern": HEADER_NAME,
                                    },
                                },
                            },
                            minProperties=1,
                        ),
                    },
                    required=["modify"],
                ),
            ],
        },
        "stale_if_error": ref("duration", "When the request fails after its retries (timeout, connection, DNS or TLS handshake failure, truncated body, 5xx), serve a stored response that has been stale for at most this long (offline fallback). The response's own stale-if-error may allow more. Unset: only what the response allows."),
        "heuristic": boolean("RFC 9111 heuristic freshness: a response without max-age or Expires but with Last-Modified is fresh for 10% of the time since it was last modified, at most 24 hours. Off: such a response is revalidated on every use.", default=False),
    },
)

# The jobs file's settings.cache: the behaviour keys above plus the store's own keys (one
# response cache per run, so only settings may place and size it).
DEFS["settings_cache"] = obj(
    "Response cache: the behaviour for every job (as in a route's cache block) and, here only, where the store lives and how large it may grow.",
    dict(DEFS["cache"]["properties"], **{
        "max_size": ref("size", "Largest total size of the stored bodies; least recently used responses are removed at the end of each run. Default 1GiB."),
        "dir": string("Directory of the response cache (index.sqlite, bodies/); relative to this file unless absolute. Default: cache/ in state_dir."),
    }),
)

DEFS["validate"] = obj(
    "Response validation, after Alamofire's validate(). A failed validation fails the job.",
    {
        "status": ref("status_set", "Acceptable statuses. Default \"2xx\"."),
        "max_size": ref("size", "Largest acceptable response body (like curl's --max-filesize); a larger body fails the job. Unset: no limit."),
        "content_type": {
            "description": "Acceptable Content-Type: accept (match the request's Accept header, with wildcards) or a list of media types (wildcards allowed). Unset: not checked.",
            "anyOf": [
                {"type": "string", "enum": ["accept"]},
                {"$ref": "#/$defs/env_ref"},
                {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "string",
                        "description": "A media type such as application/json or text/*.",
                        "pattern": with_env(MEDIA_TYPE),
                    },
                },
            ],
        },
    },
)

DEFS["redirect"] = {
    "description": "Redirect handling: follow (at most 10), no_follow, or {max, cross_host}. Authorization and cookies never go to another host.",
    "default": "follow",
    "anyOf": [
        {"type": "string", "enum": ["follow", "no_follow"]},
        {"$ref": "#/$defs/env_ref"},
        obj(
            "Follow redirects with limits.",
            {
                "max": {
                    "type": "integer",
                    "description": "Most redirects followed for one request (0 = do not follow).",
                    "minimum": 0,
                    "default": 10,
                },
                "cross_host": boolean("Follow redirects to another host.", default=True),
            },
        ),
    ],
}

DEFS["auth"] = {
    "description": "Authentication: none, or an object with exactly one of bearer, basic, header, oauth2.",
    "default": "none",
    "anyOf": [
        {"type": "string", "enum": ["none"]},
        obj(
            "Exactly one authentication scheme.",
            {
                "bearer": string("Token sent as Authorization: Bearer <token>. Usually ${SOME_TOKEN}."),
                "basic": obj(
                    "HTTP Basic authentication.",
                    {
                        "username": string("User name."),
                        "password": string("Password. Usually ${SOME_PASSWORD}."),
                    },
                    required=["username", "password"],
                ),
                "header": obj(
                    "A credential sent in a header of your choice (e.g. an API key).",
                    {
                        "name": string("Header name.", pattern=HEADER_NAME),
                        "value": string("Header value. Usually ${SOME_KEY}."),
                    },
                    required=["name", "value"],
                ),
                "oauth2": obj(
                    "OAuth 2 access tokens, fetched on first use, shared by all jobs of a run and refreshed before expiry and once on a 401.",
                    {
                        "token_url": string("Token endpoint.", pattern=with_env(HTTP_URL)),
                        "client_id": string("Client identifier."),
                        "client_secret": string("Client secret. Usually ${SOME_SECRET}."),
                        "scope": string("Space-separated scopes to request."),
                        "grant": enum_or_env(
                            ["client_credentials", "refresh_token"],
                            "Grant used to obtain tokens.",
                            default="client_credentials",
                        ),
                        "refresh_token": string("Refresh token; required with grant: refresh_token."),
                    },
                    required=["token_url", "client_id"],
                    allOf=[
                        {
                            "if": {
                                "required": ["grant"],
                                "properties": {"grant": {"const": "refresh_token"}},
                            },
                            "then": {"required": ["refresh_token"]},
                        }
                    ],
                ),
            },
            minProperties=1,
            maxProperties=1,
        ),
    ],
}

DEFS["tls"] = obj(
    "TLS: trust anchors, public-key pins, a client certificate. Every key is optional; layers merge key by key.",
    {
        "ca_file": string("PEM file of CA certificates to trust (relative to the file that sets it): added to the system's trust store, or instead of it with ca_mode: replace."),
        "ca_mode": enum_or_env(["add", "replace"], "How ca_file combines with the system's trust store: add (default) or replace.", default="add"),
        "pins": {
            "type": "array",
            "description": "Public-key pins: base64 SHA-256 hashes of the server certificate's SubjectPublicKeyInfo. The key must match one of them, checked after the handshake and before any request byte (https:// only); a mismatch fails with tls_pin_mismatch and is never retried.",
            "minItems": 1,
            "uniqueItems": True,
            "items": {
                "type": "string",
                "description": "A pin: sha256/<base64>, or curl's spelling sha256//<base64>.",
                "pattern": with_env(PIN),
            },
        },
        "insecure": boolean("Skip certificate verification (prints a warning on every run).", default=False),
        "client_cert": string("PEM client certificate (chain) for servers that require one (relative to the file that sets it). Needs client_key in the same block."),
        "client_key": string("PEM private key of client_cert (relative to the file that sets it); may be encrypted, with client_key_passphrase."),
        "client_key_passphrase": string("Passphrase of an encrypted client_key; write it as ${VAR}, it is never written anywhere."),
    },
    dependentRequired={"client_cert": ["client_key"], "client_key": ["client_cert"], "client_key_passphrase": ["client_key"]},
)

DEFS["encoding"] = enum_or_env(
    ["url", "query", "form", "json", "multipart"],
    "Where `parameters` go: url (query string for GET, HEAD, DELETE, form body otherwise), query, form, json, multipart.",
    default="url",
)

DEFS["encoding_options"] = obj(
    "Options of the url, query and form encodings (Alamofire's URLEncodedFormEncoder).",
    {
        "arrays": enum_or_env(
            ["brackets", "no_brackets", "index_in_brackets"],
            "Array keys: a[]=1&a[]=2, a=1&a=2, or a[0]=1&a[1]=2.",
            default="brackets",
        ),
        "bools": enum_or_env(
            ["numeric", "literal"],
            "Booleans as 1/0 or true/false.",
            default="numeric",
        ),
        "spaces": enum_or_env(
            ["percent", "plus"],
            "Spaces as %20 or +.",
            default="percent",
        ),
        "nested": enum_or_env(
            ["brackets", "dots"],
            "Nested object keys: a[b]=1 or a.b=1.",
            default="brackets",
        ),
        "sort_keys": boolean("Emit keys in sorted order.", default=True),
    },
)

DEFS["multipart_part"] = obj(
    "One multipart/form-data part: {name, value} or {name, file}, optionally with filename and content_type.",
    {
        "name": string("Form field name."),
        "value": {
            "description": "Inline value of the part (text).",
            "type": ["string", "number", "boolean"],
        },
        "file": string("Path of a file whose contents are the part (relative to the file that names it)."),
        "filename": string("File name sent in Content-Disposition. Default: the file's base name for file parts."),
        "content_type": string("Content-Type of the part. Default: guessed from the file name, text/plain for values."),
    },
    required=["name"],
    oneOf=[{"required": ["value"]}, {"required": ["file"]}],
)

DEFS["parameters"] = {
    "description": "Request parameters, encoded as `encoding` says: an object, or for encoding: multipart a list of parts. {{name}} placeholders are filled in.",
    "anyOf": [
        {"type": "object"},
        {
            "type": "array",
            "items": {"$ref": "#/$defs/multipart_part"},
        },
    ],
}

DEFS["query"] = {
    "type": "object",
    "description": "Query items always added to the URL, whatever the encoding (e.g. next to a JSON body). Encoded with encoding_options.",
}

DEFS["body"] = obj(
    "A raw request body: exactly one of text, file, base64.",
    {
        "text": string("Body text, sent as UTF-8. {{name}} placeholders are filled in."),
        "file": string("Path of a file streamed as the body (relative to the file that names it)."),
        "base64": string("Body bytes, base64-encoded.", pattern=r"^([A-Za-z0-9+/=\s]*|" + ENV + ")$"),
        "content_type": string("Content-Type of the body. Default: text/plain; charset=utf-8 for text, application/octet-stream otherwise."),
    },
    oneOf=[{"required": ["text"]}, {"required": ["file"]}, {"required": ["base64"]}],
)

DEFS["param"] = obj(
    "A typed route input, filled from a job's params.",
    {
        "type": {
            "type": "string",
            "description": "Value type.",
            "enum": ["string", "integer", "number", "boolean", "array", "object"],
            "default": "string",
        },
        "required": boolean("The job must give a value (path placeholders are always required).", default=False),
        "default": {"description": "Value used when the job gives none."},
        "enum": {
            "type": "array",
            "description": "The only values allowed.",
            "minItems": 1,
            "uniqueItems": True,
        },
        "minimum": {"type": "number", "description": "Smallest allowed value (integer and number)."},
        "maximum": {"type": "number", "description": "Largest allowed value (integer and number)."},
        "pattern": string("Regular expression a string value must match (anywhere, unless anchored).", format="regex"),
        "description": string("What the parameter means (shown by `fetchctl routes`)."),
    },
)

DEFS["segments"] = {
    "type": "integer",
    "description": "Connections for one download (aria2c's --split): the file is fetched as this many ranges at once into one .part, each resumable. Files under 2 MiB, and servers without ranges or a strong validator, get one connection. At most per_host run at once.",
    "minimum": 1,
    "maximum": 16,
    "default": 1,
}

DEFS["route_download"] = {
    "description": "The response streams to disk (the job's download: path) instead of memory: true, false, or {resumable, segments}.",
    "default": False,
    "anyOf": [
        {"type": "boolean"},
        obj(
            "Download options.",
            {
                "resumable": boolean("Continue an interrupted transfer with Range/If-Range.", default=True),
                "segments": ref("segments", "Connections per download of this route (segments > 1 needs resumable)."),
            },
            # Segments are ranges: more than one needs resumable (range requests) on.
            **{"if": {"properties": {"resumable": {"const": False}}, "required": ["resumable"]},
               "then": {"properties": {"segments": {"maximum": 1}}}},
        ),
    ],
}


DEFS["jsonpath"] = string(
    "A JSONPath query (RFC 9535 subset: $, .name, ['name'], [index] (negative from the end), [*], .*, [start:end:step], ..name descendants; no filters).",
    pattern="^(\\$.*|" + ENV + ")$",
)

PARAM_PATH = r"^[^.\s]+(\.[^.\s]+)*$"

DEFS["paginate"] = obj(
    "The route's results come a page at a time: how the next request follows from the last response, where a page's records are, and when to stop. See docs/crawling.md.",
    {
        "next": {
            "type": "object",
            "description": "How the next page is requested: exactly one style.",
            "minProperties": 1,
            "maxProperties": 1,
            "additionalProperties": False,
            "properties": {
                "link_header": string("Follow the Link header's target with this relation (RFC 8288), as GitHub pages.", minLength=1, examples=["next"]),
                "json": ref("jsonpath", "A URL in the body (absolute, or relative to the request's); null, missing or empty ends pagination."),
                "cursor": obj(
                    "Send the value at `from` as `param`; null, missing or empty ends pagination.",
                    {
                        "from": ref("jsonpath", "Where the next cursor is in the body."),
                        "param": string("The query parameter, or for a JSON body a dotted path into it (variables.after).", pattern=PARAM_PATH),
                    },
                    required=["from", "param"],
                ),
                "offset": obj(
                    "Send `param` = start, start + limit, …; a page with fewer than `limit` records is the last.",
                    {
                        "param": string("The offset's query parameter (or dotted path into a JSON body).", pattern=PARAM_PATH),
                        "limit_param": string("Also send `limit` under this name.", pattern=PARAM_PATH),
                        "limit": {"type": "integer", "minimum": 1, "description": "Records a page asks for."},
                        "start": {"type": "integer", "minimum": 0, "default": 0, "description": "The first offset."},
                    },
                    required=["param", "limit"],
                ),
                "page": obj(
                    "Send the page number as `param`, counting up from `start`.",
                    {
                        "param": string("The page number's query parameter (or dotted path into a JSON body).", pattern=PARAM_PATH),
                        "start": {"type": "integer", "minimum": 0, "default": 1, "description": "The first page's number."},
                    },
                    required=["param"],
                ),
            },
        },
        "items": ref("jsonpath", "Where a page's records are: a path to an array means its elements; a path with a wildcard means its matches. save_items writes them; when_empty counts them."),
        "stop": obj(
            "What ends pagination besides the next link or cursor running out.",
            {
                "when_empty": boolean("A page with no records (per items) is the last.", default=True),
                "max_pages": {"type": "integer", "minimum": 1, "default": 1000,
                              "description": "At most this many pages a run; reaching it with more to fetch ends pagination with a pagination.stopped warning, and the job succeeds."},
                "total": ref("jsonpath", "Stop once this many records (the value at this path) have been fetched. Needs items."),
                "status": ref("status_set", "A response with this status ends pagination (it is not a page, and not a failure): e.g. 404."),
                "while": ref("jsonpath", "Go on only while the value here is true (e.g. $.data.repos.pageInfo.hasNextPage)."),
            },
        ),
    },
    required=["next"],
)


DEFS["capture"] = {
    "type": "object",
    "description": "One value from the response, for later jobs as {{jobs.<job id>.<name>}}: exactly one of json, header, regex.",
    "properties": {
        "json": ref("jsonpath", "The first match's text in the JSON body."),
        "header": string("A response header's value.", pattern=HEADER_NAME),
        "regex": string("The first match in the body's text; its first group when it has one.", format="regex"),
        "secret": boolean("Redact the value everywhere fetchctl writes, as a secret ${VAR}.", default=False),
    },
    "additionalProperties": False,
    "oneOf": [{"required": ["json"]}, {"required": ["header"]}, {"required": ["regex"]}],
}


def behaviour_properties():
    return {
        "headers": ref("headers", "Request headers; null removes an inherited header."),
        "timeout": ref("timeout", "Connect, read and total timeouts."),
        "retry": ref("retry", "Retry policy."),
        "cache": ref("cache", "Response cache policy."),
        "validate": ref("validate", "Response validation."),
        "redirect": ref("redirect", "Redirect handling."),
        "auth": ref("auth", "Authentication."),
        "tls": ref("tls", "TLS trust settings."),
    }


def request_properties():
    """Keys that shape the request; a route has them, and so does an ad-hoc (url:) job."""
    return {
        "method": ref("method", "HTTP method. Default GET."),
        "parameters": ref("parameters", "Request parameters, placed as `encoding` says."),
        "encoding": ref("encoding", "Where parameters go. Default url."),
        "encoding_options": ref("encoding_options", "Options of the url, query and form encodings."),
        "query": ref("query", "Query items always added to the URL."),
        "body": ref("body", "A raw body: exactly one of text, file, base64."),
    }


# A GET or HEAD (GET is the default) may not carry a raw body; list parameters
# belong to encoding: multipart and encoding: multipart takes a list.
REQUEST_RULES = [
    {
        "if": {
            "anyOf": [
                {"not": {"required": ["method"]}},
                {"required": ["method"], "properties": {"method": {"enum": ["GET", "HEAD"]}}},
            ]
        },
        "then": {"not": {"required": ["body"]}},
    },
    {
        "if": {"required": ["encoding"], "properties": {"encoding": {"const": "multipart"}}},
        "then": {"properties": {"parameters": {"type": "array"}}},
    },
    {
        "if": {"required": ["parameters"], "properties": {"parameters": {"type": "array"}}},
        "then": {
            "required": ["encoding"],
            "properties": {
                "encoding": {"anyOf": [{"const": "multipart"}, {"$ref": "#/$defs/env_ref"}]}
            },
        },
    },
]

DEFS["defaults"] = obj(
    "Behaviour for every route of this file; each route may override it.",
    behaviour_properties(),
)

route_props = {
    "description": string("What the route does (shown by `fetchctl routes`)."),
}
request = request_properties()
route_props["method"] = request.pop("method")
route_props["path"] = string(
    "Path appended to base_url; starts with /. {{name}} placeholders name required params and are percent-encoded.",
    pattern="^/",
)
route_props["params"] = {
    "type": "object",
    "description": "The route's typed inputs, by name.",
    "propertyNames": {"pattern": PARAM_NAME},
    "additionalProperties": {"$ref": "#/$defs/param"},
}
route_props.update(request)
route_props.update(behaviour_properties())
route_props["download"] = ref("route_download", "Stream the response to disk: true, false or {resumable}.")
route_props["paginate"] = ref("paginate", "Page through the results (jobs may override it): next, items, stop.")

DEFS["route"] = obj(
    "One endpoint.",
    route_props,
    required=["path"],
    allOf=REQUEST_RULES,
)

settings_props = {
    "concurrency": {
        "type": "integer",
        "description": "Jobs in flight at once; where per_host is lower, requests in flight at once (jobs waiting for a busy host don't count).",
        "minimum": 1,
        "default": 8,
    },
    "per_host": {
        "type": "integer",
        "description": "Requests in flight to one host.",
        "minimum": 1,
        "default": 4,
    },
    "rate_limits": {
        "type": "object",
        "description": "Request rate per host (host or host:port).",
        "propertyNames": {"pattern": HOST},
        "additionalProperties": {"$ref": "#/$defs/rate"},
    },
    "output_dir": string("Where save and download paths land; relative to this file unless absolute.", default="out"),
    "state_dir": string("Run history, resume state and response cache; relative to this file unless absolute.", default=".fetchctl"),
    "fail_fast": boolean("Cancel the remaining jobs after the first failure.", default=False),
}
settings_props.update(behaviour_properties())
settings_props["cache"] = ref("settings_cache", "Response cache policy for every job, and the store's size and place.")
DEFS["settings_network"] = obj(
    "Network outages: when a request fails because the network is gone (no route, network down, a temporary DNS failure, a connect timeout) and the network monitor confirms it, the job waits for the network instead of spending a retry.",
    {
        "max_wait": ref("duration", "How long jobs wait for the network, counted from when it was lost; past it they fail with the code offline, .part files are kept, and the run exits 75. Default 5m."),
    },
)
settings_props["network"] = ref("settings_network", "Waiting out network outages.")
DEFS["settings_proxy"] = obj(
    "A forward proxy for every request, instead of the environment's (https_proxy, http_proxy, all_proxy, no_proxy, read as curl reads them).",
    {
        "url": string("http://[user:password@]host:port (a CONNECT tunnel; credentials become Proxy-Authorization) or socks5://host:port; \"\" sends every request direct.",
                      pattern=r"^(|(?!https://)(?!ftp://)[^\s]*)$"),
        "no_proxy": {
            "description": "Hosts that go direct: names, domains (example.com covers its subdomains), IP addresses, CIDR ranges, or * for all. A list, or one comma-separated string as in NO_PROXY.",
            "anyOf": [
                {"type": "array", "items": {"type": "string"}},
                {"type": "string"},
            ],
        },
    },
)
settings_props["proxy"] = ref("settings_proxy", "A proxy for every request, instead of the environment's.")
settings_props["download"] = obj(
    "Defaults for downloads.",
    {"segments": ref("segments", "Connections per download where neither the job nor its route says.")},
)
settings_props["http_version"] = enum_or_env(
    ["auto", "1.1"],
    "HTTP versions to offer: auto negotiates HTTP/2 over TLS where the server offers it (one multiplexed connection per host), 1.1 uses HTTP/1.1 only.",
    default="auto",
)
# `http_version: 1.1` unquoted is a YAML number.
settings_props["http_version"]["anyOf"].insert(1, {"const": 1.1})
DEFS["settings"] = obj(
    "Run settings, and behaviour for every job (the outermost configurable layer).",
    settings_props,
)

job_props = {
    "id": string("Unique job id ([A-Za-z0-9_.-]+). Matrix expansions are named id[key=value,...].", pattern=JOB_ID),
    "description": string("What the job is for."),
    "route": string("The route to call, as service.route.", pattern=ROUTE_REF),
    "url": string("Full URL of an ad-hoc request (instead of route).", pattern="^(" + HTTP_URL + "|" + ENV + r"\S*|\{\{[^}]+\}\}\S*)$"),
    "params": {
        "type": "object",
        "description": "Values of the route's params, by name. {{matrix.key}} placeholders are filled in.",
        "propertyNames": {"pattern": PARAM_NAME},
    },
    "matrix": {
        "type": "object",
        "description": "Run one job per combination of values; use them as {{matrix.key}}.",
        "minProperties": 1,
        "propertyNames": {"pattern": PARAM_NAME},
        "additionalProperties": {
            "type": "array",
            "description": "Values of one matrix key.",
            "minItems": 1,
            "uniqueItems": True,
            "items": {"type": ["string", "number", "boolean"]},
        },
    },
    "from": {
        "description": "One job per record of a data file, read as the run goes (never whole into memory): .csv/.tsv (header row: {{row.<column>}}), .jsonl (objects: {{row.<key>}}), .txt (one value a line: {{row.line}}), each also .gz. {{row.number}} counts records from 1.",
        "anyOf": [
            {"type": "string", "minLength": 1},
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["file"],
                "properties": {
                    "file": {"type": "string", "minLength": 1, "description": "The data file, relative to this jobs file."},
                    "format": {"enum": ["csv", "tsv", "jsonl", "txt"], "description": "The format, when the file's name does not say it."},
                },
            },
        ],
    },
    "key": string("The id suffix of a data file's or a fan-out's jobs, page[<key>]; unique in the file. Default: the record number.", minLength=1),
    "needs": {
        "type": "array",
        "description": "Jobs that must succeed (or be up to date) before this one starts.",
        "uniqueItems": True,
        "items": {"type": "string", "pattern": JOB_ID},
    },
}
job_props.update(request_properties())
job_props["save"] = string("Write the response body to this path under output_dir (atomically).", minLength=1)
job_props["download"] = {
    "description": "Stream the response to this path under output_dir, resumably; or {path, segments} to fetch it over several connections.",
    "anyOf": [
        string("The path under output_dir.", minLength=1),
        obj(
            "A download over several connections.",
            {
                "path": string("The path under output_dir.", minLength=1),
                "segments": ref("segments", "Connections for this download."),
            },
            required=["path"],
        ),
    ],
}
job_props["save_headers"] = string(
    "Write the status line and response headers to this path under output_dir, like curl -D (CRLF line ends; credential headers such as Set-Cookie as <redacted>). A response from the cache gives its stored headers with its current Age.",
    minLength=1,
)
job_props["checksum"] = ref("checksum", "Expected digest of the download: sha256:<hex> or sha512:<hex>.")
job_props["paginate"] = {
    "description": "Page through the results, instead of the route's paginate; false: one request, though the route paginates.",
    "anyOf": [{"const": False}, {"$ref": "#/$defs/paginate"}],
}
job_props["capture"] = {
    "type": "object",
    "description": "Values this job takes from its response (the last page's, when it paginates), used by later jobs as {{jobs.<id>.<name>}}; using one makes the later job wait for this one.",
    "propertyNames": {"pattern": PARAM_NAME},
    "additionalProperties": {"$ref": "#/$defs/capture"},
}
job_props["for_each"] = obj(
    "One job per record of another job's responses (every page of a paginated one): its values as {{<as>.<field>}}, ids <id>[<key>], made as the run goes.",
    {
        "job": string("The job whose responses hold the records (written out in this file; every expansion of a matrix job).", pattern=JOB_ID),
        "items": ref("jsonpath", "Where each response's records are (default $: an array body's elements)."),
        "as": string("The placeholder name: {{<as>.<field>}}, {{<as>.number}}. Default item.", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"),
    },
    required=["job"],
)
job_props["incremental"] = obj(
    "Fetch only what changed since the last successful run: send `param` = the cursor, and once the job fully succeeded (every page, every output), store the greatest value `from` finds in its responses as the next run's cursor. A failed run never advances it.",
    {
        "param": string("A route param of that name, else a query parameter (for a JSON body, a dotted path into it).", pattern=PARAM_PATH),
        "from": ref("jsonpath", "Where the cursor values are in each response (every page); the greatest is kept (numbers as numbers, else as text)."),
        "initial": string("The cursor before the first successful run (or after run --reset-incremental JOB)."),
    },
    required=["param", "from", "initial"],
)
job_props["save_items"] = string(
    "Append the records of every page (paginate.items) to this path under output_dir as JSON Lines, moved into place when the last page is in.",
    minLength=1,
)
job_props.update(behaviour_properties())

DEFS["job"] = obj(
    "One fetch: a route with params, or an ad-hoc url.",
    job_props,
    required=["id"],
    oneOf=[{"required": ["route"]}, {"required": ["url"]}],
    dependentRequired={"checksum": ["download"]},
    allOf=[
        {"not": {"required": ["save", "download"]}},
        {"not": {"required": ["save_items", "download"]}},
        {"not": {"required": ["from", "for_each"]}},
        {"if": {"required": ["key"]}, "then": {"anyOf": [{"required": ["from"]}, {"required": ["for_each"]}]}},
        {"not": {"required": ["paginate", "download"]}},
        {"not": {"required": ["incremental", "download"]}},
        {
            "if": {"required": ["route"]},
            "then": {
                "not": {
                    "anyOf": [
                        {"required": ["method"]},
                        {"required": ["parameters"]},
                        {"required": ["encoding"]},
                        {"required": ["encoding_options"]},
                        {"required": ["query"]},
                        {"required": ["body"]},
                    ]
                }
            },
        },
    ] + REQUEST_RULES,
)

# --------------------------------------------------------------------------
# Top levels
# --------------------------------------------------------------------------


def route_file_properties():
    return {
        "service": string(
            "Namespace of this file's routes: jobs call them as service.route. Required with routes.",
            pattern=SERVICE_NAME,
        ),
        "base_url": string(
            "URL every route path is appended to. Required with routes. ${VAR:-default} allowed.",
            pattern="^(" + HTTP_URL + "|" + ENV + r"\S*)$",
        ),
        "description": string("What this file describes."),
        "defaults": ref("defaults", "Behaviour for every route of this file."),
        "routes": {
            "type": "object",
            "description": "Routes by name ([A-Za-z_][A-Za-z0-9_]*).",
            "propertyNames": {"pattern": ROUTE_NAME},
            "additionalProperties": {"$ref": "#/$defs/route"},
        },
    }


def routes_schema():
    props = {"version": ref("version", "File format version: 1.")}
    props.update(route_file_properties())
    return {
        "$schema": DRAFT,
        "$id": BASE_ID + "routes.schema.json",
        "title": "fetchctl route file",
        "description": "Endpoints as data: a service, its base URL, shared behaviour and named routes.",
        "type": "object",
        "required": ["version"],
        "properties": props,
        "additionalProperties": False,
        "dependentRequired": {"routes": ["service", "base_url"]},
    }


def jobs_schema():
    props = {
        "version": ref("version", "File format version: 1."),
        "include": {
            "type": "array",
            "description": "Route files to load, relative to this file.",
            "uniqueItems": True,
            "items": {"type": "string", "minLength": 1},
        },
        "settings": ref("settings", "Run settings and behaviour for every job."),
        "jobs": {
            "type": "array",
            "description": "What to fetch.",
            "items": {"$ref": "#/$defs/job"},
        },
    }
    props.update(route_file_properties())
    return {
        "$schema": DRAFT,
        "$id": BASE_ID + "jobs.schema.json",
        "title": "fetchctl jobs file",
        "description": "What to fetch: included route files, run settings and jobs. May also hold route-file keys.",
        "type": "object",
        "required": ["version"],
        "properties": props,
        "additionalProperties": False,
        "dependentRequired": {"routes": ["service", "base_url"]},
    }


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


def refs_in(node, found):
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith("#/$defs/"):
            found.add(r[len("#/$defs/"):])
        for value in node.values():
            refs_in(value, found)
    elif isinstance(node, list):
        for value in node:
            refs_in(value, found)


def attach_defs(schema, extra=()):
    """Add the $defs reachable from schema (plus `extra`), in DEFS order."""
    needed = set(extra)
    refs_in(schema, needed)
    while True:
        more = set(needed)
        for name in needed:
            refs_in(DEFS[name], more)
        if more == needed:
            break
        needed = more
    schema["$defs"] = {name: DEFS[name] for name in DEFS if name in needed}
    return schema


def render(schema):
    return json.dumps(schema, indent=2, ensure_ascii=True) + "\n"


def outputs():
    routes = render(attach_defs(routes_schema(), extra=[]))
    jobs = render(attach_defs(jobs_schema(), extra=[]))
    return {
        "routes.schema.json": routes,
        "jobs.schema.json": jobs,
    }


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    check = "--check" in argv[1:]
    stale = []
    for name, text in outputs().items():
        path = os.path.join(here, name)
        if check:
            try:
                with open(path, encoding="utf-8", newline="") as f:
                    current = f.read()
            except FileNotFoundError:
                current = None
            if current != text:
                stale.append(name)
        else:
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
    if stale:
        print("stale: " + ", ".join(stale) + " (run python3 schemas/generate.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
