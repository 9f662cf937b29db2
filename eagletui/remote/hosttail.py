"""The log reader eagletui runs on the host: stdlib only, Python >= 3.6 (see :mod:`hostside`).

Sent as source text (``python3 -c SOURCE tail ARGS...``) by :class:`eagletui.remote.tail.LogTail`.
It streams framed chunks tagged with their file offset and exits when its stdin closes, so a
dropped channel leaves no orphan reader. The file is identified by (dev, inode) and by a checksum
of the bytes just before the offset, so a replaced file, or one truncated and rewritten past the
old offset, is reported (``T`` frame, then read from 0) whatever its size.
"""

import os
import select
import struct
import sys
import time
import zlib

# isort: off
# host-program: local imports (host_source drops the lines down to the end marker: on the
# host the parts are one program text, and these names are its own)
from eagletui.remote.hostfiles import Untrusted, _open_own
# host-program: end of local imports
# isort: on

#: Bytes before the read offset that the reader compares to notice a rewritten file of any size.
ANCHOR = 4096
#: The read size: a bounded chunk, so a 1 GB append is streamed, never held.
CHUNK = 262144

#: Frame: kind (1 byte), a (u64), payload length (u32), payload.
#:   D a=offset data | T a=new offset, payload=reason | I a=inode, payload=device
#:   W file missing | H a=position | E payload=why the file is not read (a link, not ours): final
HEADER = struct.Struct(">cQI")


def anchor_crc(data):
    return zlib.crc32(data) & 0xFFFFFFFF


def rewritten(fd, pos, alen, acrc):
    """Whether the ``alen`` bytes before ``pos`` are no longer the ones the client holds.

    A truncate followed by a bigger write leaves the size above the old offset: only the content
    tells. ``alen`` 0 means the client has nothing to compare (offset 0).
    """
    if not alen or pos < alen:
        return False
    try:
        b = os.pread(fd, alen, pos - alen)
    except OSError:
        return False
    return len(b) != alen or anchor_crc(b) != acrc


def op_tail(args):
    """argv: path pos ino dev alen acrc [own]. Stream frames from ``pos``; exit when stdin closes.

    The file is identified by (dev, inode) and by a checksum of the last bytes delivered, so a
    replaced or rewritten file is reported (``T`` frame, then read from 0) whatever its size. ``own``
    (the log of a run eagletui started) is opened only if it is a regular file of ours, never
    through a symbolic link: anything else is one ``E`` frame with the reason, and the end.

    One piece: open, check, read and re-check share the file's identity, the offset and the anchor
    of the bytes before it, and each step may reset all three; split, every part would hand those
    back and forth, and the order of the checks around each read (which is what catches a rewrite)
    would no longer be read in one place.
    """
    path, pos = args[0], int(args[1])
    ino0, dev0, alen, acrc = int(args[2]), int(args[3]), int(args[4]), int(args[5])
    own = len(args) > 6 and args[6] == "own"
    _deepen_pipe()
    tail = b""  # the last ANCHOR bytes sent (to check the file before each read)
    ifd = _watch_dir(path)

    def reset(reason):
        nonlocal tail
        _frame(b"T", 0, reason)
        tail = b""
        return 0, 0, 0

    fd = None
    ino = dev = None
    waiting = False
    last_hb = time.time()
    while True:
        if fd is None:
            try:
                fd = _open_own(path) if own else os.open(path, os.O_RDONLY)
            except Untrusted as e:
                _frame(b"E", 0, str(e).encode("utf-8", "replace"))
                return
            except OSError:
                fd = None
                if not waiting:
                    _frame(b"W", 0)
                    waiting = True
            if fd is not None:
                waiting = False
                st = os.fstat(fd)
                ino, dev = st.st_ino, st.st_dev
                if (ino0 and ino != ino0) or (dev0 and dev != dev0):
                    pos, alen, acrc = reset(b"replaced")
                elif st.st_size < pos or rewritten(fd, pos, alen, acrc):
                    pos, alen, acrc = reset(b"truncated")
                ino0, dev0 = ino, dev
                _frame(b"I", ino, str(dev).encode())
        if fd is not None:
            while True:
                b = os.pread(fd, CHUNK, pos)
                if not b:
                    break  # a file now shorter than the offset reads nothing: the check below says so
                if rewritten(fd, pos, alen, acrc):
                    # checked after the read, not before it: a rewrite between a check and the read
                    # handed the new file's bytes on past an offset that is not its own (seen under
                    # load: the old content's reader got the new one's tail and no reset)
                    pos, alen, acrc = reset(b"truncated")
                    continue
                _frame(b"D", pos, b)
                pos += len(b)
                tail = (tail + b[-ANCHOR:])[-ANCHOR:]
                alen, acrc = len(tail), anchor_crc(tail)
            if os.fstat(fd).st_size < pos or rewritten(fd, pos, alen, acrc):
                pos, alen, acrc = reset(b"truncated")
                continue
            try:
                st = os.stat(path)
                replaced = (st.st_ino, st.st_dev) != (ino, dev)
            except OSError:
                replaced = False
            if replaced:
                b = os.pread(fd, CHUNK, pos)
                if b:
                    continue
                os.close(fd)
                fd = None
                continue
        now = time.time()
        if now - last_hb > 5:
            _frame(b"H", pos)
            last_hb = now
        _wait(ifd)


def _deepen_pipe():
    try:  # a deeper pipe keeps us reading ahead while the client is busy (Linux; best effort)
        import fcntl

        fcntl.fcntl(1, 1031, 1 << 20)  # F_SETPIPE_SZ
    except (ImportError, OSError):
        pass


def _frame(k, a, p=b""):
    """Write one frame to stdout, whole; exit when the client is gone."""
    d = HEADER.pack(k, a, len(p)) + p
    while d:
        try:
            n = os.write(1, d)
        except OSError:
            os._exit(0)
        d = d[n:]


def _watch_dir(path):
    """An inotify fd watching the file's directory (writes, renames, new and deleted files), or -1 where
    there is none (not Linux, no ctypes, out of watches): then the reader polls."""
    ifd = -1
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        ifd = libc.inotify_init1(0o4000 | 0o2000000)
        if ifd >= 0:
            d = os.path.dirname(os.path.abspath(path)) or "/"
            if libc.inotify_add_watch(ifd, d.encode(), 0x2 | 0x4 | 0x8 | 0x80 | 0x100 | 0x200 | 0x40) < 0:
                os.close(ifd)
                ifd = -1
    except Exception:
        ifd = -1
    return ifd


def _wait(ifd):
    """Sleep until stdin or the watched directory has news (at most 0.5 s, 0.02 s without inotify);
    exit when stdin has closed: the client is gone."""
    rl = [0] + ([ifd] if ifd >= 0 else [])
    r = select.select(rl, [], [], 0.5 if ifd >= 0 else 0.02)[0]
    if 0 in r and not os.read(0, 4096):
        os._exit(0)
    if ifd in r:
        try:
            os.read(ifd, 65536)
        except OSError:
            pass


def main(argv):
    if not argv or argv[0] != "tail":
        sys.stderr.write(f"eagletui hosttail: unknown operation {argv[:1]!r}\n")
        sys.exit(2)
    op_tail(argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
