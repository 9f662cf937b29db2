"""The run dir's files and the answer on stdout, for the host program (a part of ``hostside``).

Stdlib only, Python >= 3.6 (see :mod:`hostside`). Apart because both the launch and the stop parts
write and read a run dir (atomically, 0600) and answer with one JSON object.
"""

import json
import os
import sys


def _write(path, data):
    """Atomically, and 0600: command.sh holds the real secrets so that it can relaunch."""
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(data)
    os.replace(tmp, path)


def _load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _out(obj):
    try:
        sys.stdout.write(json.dumps(obj))
        sys.stdout.flush()
    except OSError:
        pass  # the client is gone (connection dropped): what we did is on disk for it to find


def exit_info(rd):
    code = sig = None
    try:
        with open(os.path.join(rd, "exit_code")) as f:
            code = int(f.read().strip())
        with open(os.path.join(rd, "exit_signal")) as f:
            sig = int(f.read().strip())
    except (OSError, ValueError):
        pass
    return code, sig
