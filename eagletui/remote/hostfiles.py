"""The run dir's files, the trust in the runs dir and the answer on stdout, for the host programs.

Stdlib only, Python >= 3.6 (see :mod:`hostside`): a part of ``hostside``, ``hostslurm`` and
``hosttail``. Apart because every operation that reads or writes a run dir goes through it:

* **trust** (:func:`runs_dir_problem`, :func:`run_dir_problem`): like OpenSSH's StrictModes, a runs
  dir that someone else can write (or whose path someone else can rename) is refused with a message
  that says how to fix it, unless the profile names the group it is shared with; a run dir must be a
  real directory of ours that nobody else can write. A run record planted there by another user is
  never taken for one of ours, and its pid never signalled;
* **files** (:func:`_write`, :func:`_load`, :func:`_read`): never through a symlink (``O_NOFOLLOW``),
  only a regular file, and (in a run dir) only one of ours: a planted ``server.log`` link to a file
  the user may read (a root-only file when eagletui runs as root) never reaches the screen.
"""

import errno
import json
import os
import stat
import sys

#: What ``--runs-dir-group`` (the profile's ``server.runs_dir_group``) is called in messages.
GROUP_KEY = "runs_dir_group"


class Untrusted(Exception):
    """A file or directory eagletui will not read or write: the message says why and how to fix it."""


# ------------------------------------------------------------------------------- trust


def _who(uid):
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _group(gid):
    try:
        import grp

        return grp.getgrgid(gid).gr_name
    except (ImportError, KeyError):
        return str(gid)


def _gid_of(name):
    """The gid of the group the profile names (a number is taken as a gid), None if there is none."""
    if not name:
        return None
    try:
        import grp

        return grp.getgrnam(name).gr_gid
    except (ImportError, KeyError):
        return int(name) if str(name).isdigit() else None


def _mode_problem(st, path, what, gid_ok):
    """Why ``st`` (of ``path``) lets someone else replace what is in it, or None."""
    mode = stat.S_IMODE(st.st_mode)
    sticky = bool(mode & stat.S_ISVTX)
    if mode & stat.S_IWOTH and not sticky:
        return f"{what} {path} is writable by everyone (mode {mode:04o})"
    if mode & stat.S_IWGRP and not sticky and st.st_gid != gid_ok:
        return f"{what} {path} is writable by group {_group(st.st_gid)} (mode {mode:04o})"
    return None


def runs_dir_problem(runs, group=""):
    """Why the runs dir ``runs`` (an absolute path) may not be trusted, with the fix; None if it may.

    The dir itself: ours (or, when the profile names ``group``, that group's), not writable by others,
    group-writable only by the named group. Each directory above it: owned by root or us and not
    writable by anyone else unless sticky (``/tmp``), so nobody can rename the runs dir away and put
    their own in its place. A dir that does not exist yet is created private by the launch.
    """
    uid = os.getuid()
    gid_ok = _gid_of(group)
    if group and gid_ok is None:
        return f"{GROUP_KEY} = {group!r}: there is no such group on this host"
    real = os.path.realpath(runs)
    try:
        st = os.stat(real)
    except OSError as e:
        if e.errno == errno.ENOENT:
            return None
        return f"cannot check the runs dir {runs}: {e}"
    if not stat.S_ISDIR(st.st_mode):
        return f"the runs dir {runs} is not a directory"
    why = None
    if st.st_uid != uid and not (gid_ok is not None and st.st_gid == gid_ok):
        why = f"the runs dir {runs} belongs to {_who(st.st_uid)}, not to you"
    why = why or _mode_problem(st, runs, "the runs dir", gid_ok)
    parent = os.path.dirname(real)
    while not why and parent and parent != real:
        try:
            pst = os.stat(parent)
        except OSError as e:
            return f"cannot check {parent} (above the runs dir): {e}"
        if pst.st_uid not in (0, uid):
            why = f"{parent} (above the runs dir) belongs to {_who(pst.st_uid)}"
        why = why or _mode_problem(pst, parent, "the directory above the runs dir,", gid_ok)
        real, parent = parent, os.path.dirname(parent)
    if not why:
        return None
    return (
        f"{why}: eagletui trusts no run record in a directory someone else can write (like OpenSSH's "
        f"StrictModes). Fix: `chmod go-w` it (and own it), or use a runs_dir of your own (the default is "
        f"~/.eagletui/runs); to share a runs dir with a group, give it to that group without write for "
        f"others (chgrp GROUP DIR; chmod 2770 DIR) and set {GROUP_KEY} = \"GROUP\" under [server] in the profile"
    )


def run_dir_problem(rd):
    """Why the run dir ``rd`` is not one of ours (a symlink, another user's, writable by others)."""
    try:
        st = os.lstat(rd)
    except OSError as e:
        return f"cannot check run dir {rd}: {e}"
    if stat.S_ISLNK(st.st_mode):
        return f"run dir {rd} is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return f"run dir {rd} is not a directory"
    if st.st_uid != os.getuid():
        return f"run dir {rd} belongs to {_who(st.st_uid)}, not to you: not an eagletui run of yours"
    return _mode_problem(st, rd, "run dir", None)


# ------------------------------------------------------------------------------- files


def _open_own(path, flags=os.O_RDONLY, any_owner=False, mode=0o600):
    """An fd on ``path``: never through a symlink, only a regular file, and (unless ``any_owner``)
    only one of ours. :class:`Untrusted` otherwise; OSError when it cannot be opened at all. (Opened
    without blocking, so a FIFO planted in its place cannot hang us before the check.)"""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0), mode)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise Untrusted(f"{path} is a symbolic link: not following it") from None
        raise
    st = os.fstat(fd)
    why = None
    if not stat.S_ISREG(st.st_mode):
        why = f"{path} is not a regular file"
    elif not any_owner and st.st_uid != os.getuid():
        why = f"{path} belongs to {_who(st.st_uid)}, not to you"
    if why:
        os.close(fd)
        raise Untrusted(why + ": not reading it")
    return fd


def _write(path, data, mode=0o600):
    """Atomically, and 0600 (command.sh holds the real secrets so that it can relaunch); the temporary
    file is this process's own and created fresh (a link in its place is an error, never followed)."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        os.unlink(tmp)
    except OSError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w") as f:
        f.write(data)
    os.replace(tmp, path)


def _load(path, any_owner=False):
    """The JSON in ``path``, or None (missing, damaged, a link, not ours)."""
    try:
        with os.fdopen(_open_own(path, any_owner=any_owner)) as f:
            return json.load(f)
    except (OSError, ValueError, Untrusted):
        return None


def _read(path, limit=65536):
    """The last ``limit`` bytes of ``path`` as text ('' when missing, a link or not ours)."""
    try:
        with os.fdopen(_open_own(path), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                f.seek(size - limit)
            return f.read(limit).decode("utf-8", "replace")
    except (OSError, Untrusted):
        return ""


def _touch(path):
    """Create ``path`` (0600) if missing: an existing link or another user's file is an error."""
    os.close(_open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT))


def _out(obj):
    try:
        sys.stdout.write(json.dumps(obj))
        sys.stdout.flush()
    except OSError:
        pass  # the client is gone (connection dropped): what we did is on disk for it to find


def _int_file(path):
    try:
        return int(_read(path, 64).strip())
    except ValueError:
        return None


def exit_info(rd):
    """(exit code, signal) as the waiter recorded them; a signal without a code file is (None, sig)."""
    code = _int_file(os.path.join(rd, "exit_code"))
    if code is None:
        return None, None
    return code, _int_file(os.path.join(rd, "exit_signal"))
