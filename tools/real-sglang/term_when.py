"""Run a command and send it SIGTERM once its stderr shows a line (then a few seconds more), or after a
deadline: ``term_when.py PATTERN MAX_S AFTER_S -- CMD ...``.

The stall part's item 4 ends ``bench --launch`` with SIGTERM *during its benchmark*. A fixed delay (the
coreutils ``timeout`` it used) is only right on one machine: on CI's loaded 2-core machine the dry run's
25 s came before Python had even installed its signal handlers (nothing printed, exit 143), and on the GPU
its 150 s waited through many repeats. Waiting for the benchmark's own first ``repeat`` line is right on
both. The child's stdout and stderr pass through; the exit status is the child's (128 + N for a signal).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time


def main(argv: list[str]) -> int:
    pattern, max_s, after_s = argv[0], float(argv[1]), float(argv[2])
    cmd = argv[argv.index("--") + 1 :]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, errors="replace")
    seen = threading.Event()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            sys.stderr.write(line)
            sys.stderr.flush()
            if pattern in line:
                seen.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    deadline = time.monotonic() + max_s
    while proc.poll() is None and not seen.is_set() and time.monotonic() < deadline:
        time.sleep(0.2)
    if proc.poll() is None:
        if seen.is_set():
            time.sleep(after_s)
        print(f"term_when: SIGTERM ({'after ' + repr(pattern) if seen.is_set() else 'deadline'})", file=sys.stderr)
        proc.send_signal(signal.SIGTERM)
    rc = proc.wait()
    reader.join(timeout=10)
    return 128 - rc if rc < 0 else rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
