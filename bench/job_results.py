#!/usr/bin/env python3
"""The state store's job_results layouts at a million jobs, through the system SQLite (BENCHMARKS.md,
"A rerun's prune of old job results"): rows written twice, 1,000 a transaction, with the store's
pragmas, into the index-by-job layout of migrations v1-v5 and the one-row-a-job layout of v6.

  bench/job_results.py [ROWS] [DIRECTORY]
"""
import os, sqlite3, sys, time
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
DIRECTORY = sys.argv[2] if len(sys.argv) > 2 else "/tmp"
def setup(path, new):
    for s in ("", "-wal", "-shm"):
        try: os.remove(path+s)
        except FileNotFoundError: pass
    db=sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=NORMAL"); db.execute("PRAGMA cache_size=-16384")
    if new:
        db.execute('CREATE TABLE job_results (run_id TEXT NOT NULL, job TEXT PRIMARY KEY NOT NULL, outcome TEXT NOT NULL, status INTEGER, bytes INTEGER NOT NULL, attempts INTEGER NOT NULL, error TEXT, message TEXT, duration_ms INTEGER NOT NULL, finished_at DOUBLE NOT NULL) WITHOUT ROWID')
    else:
        db.execute('CREATE TABLE job_results (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, job TEXT NOT NULL, outcome TEXT NOT NULL, status INTEGER, bytes INTEGER NOT NULL, attempts INTEGER NOT NULL, error TEXT, message TEXT, duration_ms INTEGER NOT NULL, finished_at DOUBLE NOT NULL)')
        db.execute('CREATE INDEX job_results_by_job ON job_results(job, finished_at)')
    return db
def run(db, new, run_id):
    sql="INSERT INTO job_results (run_id, job, outcome, status, bytes, attempts, error, message, duration_ms, finished_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
    if new: sql+=" ON CONFLICT (job) DO UPDATE SET run_id=excluded.run_id, outcome=excluded.outcome, status=excluded.status, bytes=excluded.bytes, attempts=excluded.attempts, error=excluded.error, message=excluded.message, duration_ms=excluded.duration_ms, finished_at=excluded.finished_at"
    t=time.process_time(); w=time.perf_counter()
    for start in range(0, N, 1000):
        db.execute("BEGIN")
        db.executemany(sql, [(run_id, f"item[{i}]", "succeeded", 200, 1024, 1, None, None, 3, 1.8e9+i) for i in range(start, min(N,start+1000))])
        db.execute("COMMIT")
    return time.process_time()-t, time.perf_counter()-w
for new in (False, True):
    path=f"{DIRECTORY}/job-results-{'new' if new else 'old'}.sqlite"
    db=setup(path,new)
    a=run(db,new,"20261126T000000Z-aaaaaa"); b=run(db,new,"20261126T000001Z-bbbbbb")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    print(("new" if new else "old"), f"first run cpu {a[0]:.2f}s wall {a[1]:.2f}s; second run cpu {b[0]:.2f}s wall {b[1]:.2f}s; file {os.path.getsize(path)/1e6:.1f} MB")
    db.close()
    for s in ("", "-wal", "-shm"):  # up to 200 MB at a million rows: nothing outlives the run
        try: os.remove(path+s)
        except FileNotFoundError: pass
