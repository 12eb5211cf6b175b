#!/usr/bin/env python3
"""The response-cache peers for bench/cache.sh: requests-cache and hishel, measured as fetchctl is.

    python3 bench/cache_peers.py hit TOOL URL DB N   # microseconds per hit in one warm process
    python3 bench/cache_peers.py once TOOL URL DB    # one request, as a cron job would make it

TOOL is requests-cache or hishel; DB an SQLite file (created). URL must be fresh (Cache-Control
max-age) so that every request after the first is answered from the cache.
"""
import sys
import time


def client(tool, db):
    if tool == "requests-cache":
        import requests_cache
        session = requests_cache.CachedSession(db, backend="sqlite", cache_control=True)
        return lambda url: session.get(url).content, lambda r: None
    if tool == "hishel":
        import hishel
        from hishel.httpx import CacheClient
        session = CacheClient(storage=hishel.SqliteStorage(database_path=db))
        return lambda url: session.get(url).read(), lambda r: None
    raise SystemExit(f"unknown tool {tool}")


def main(argv):
    mode, tool, url, db = argv[1:5]
    get, _ = client(tool, db)
    if mode == "once":
        get(url)
        return 0
    n = int(argv[5])
    get(url)  # the miss that stores
    for _ in range(100):
        get(url)  # warm-up hits
    start = time.perf_counter()
    for _ in range(n):
        get(url)
    print(f"{(time.perf_counter() - start) / n * 1e6:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
