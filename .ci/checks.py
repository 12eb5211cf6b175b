"""What the .ci/*.py scripts share: one line per check, a count at the end, free ports, waiting for a
server, and the bytes fetchctl wrote (for secret hygiene checks)."""
import os, signal, socket, subprocess, sys, time

passed = failed = 0


def check(condition, what):
    """Prints `ok` or `FAIL` and the check; counted for `finish`."""
    global passed, failed
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if condition:
        passed += 1
    else:
        failed += 1


def finish():
    """Prints 'N passed, N failed' and exits non-zero when something failed."""
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, tries=100):
    for _ in range(tries):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)


def written_texts(directory, extra=(), skip_suffix=".bin"):
    """Every file under `directory` (but saved outputs ending in `skip_suffix`) as text, with `extra`."""
    texts = list(extra)
    for root, _, files in os.walk(directory):
        for name in files:
            if not name.endswith(skip_suffix):
                with open(os.path.join(root, name), "rb") as f:
                    texts.append(f.read().decode("utf-8", "replace"))
    return texts


def stop(*processes):
    """SIGTERM to each process started (None skipped), SIGKILL after 5 s."""
    for process in processes:
        if process is None:
            continue
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
