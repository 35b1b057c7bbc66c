"""One run per output folder: ``OutputLock(OUT)`` holds ``OUT/.lock`` with ``fcntl.flock`` for
the whole run.  A second run on the same folder is refused at once with one line (an
``InputError`` naming the holder's process id).  The kernel drops the lock when its process
ends, however it ends (even by SIGKILL), so the lock file a killed run leaves behind blocks
nothing: ``--resume`` takes it over.  The file itself stays (removing it would let two runs lock
two different files)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from softrank.errors import InputError

LOCK = ".lock"


class OutputLock:
    """``with OutputLock(out):`` the run's hold on OUT (module docstring)."""

    def __init__(self, out):
        self.path = Path(out) / LOCK
        self.fd: int | None = None

    def __enter__(self) -> "OutputLock":
        try:  # not inherited by worker processes (os.open's default): only this process holds it
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as err:
            raise InputError(str(self.path), "lock", f"cannot open the lock file: {err.strerror or err}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _holder(fd)
            os.close(fd)
            raise InputError(str(self.path.parent), "", f"in use by another softrank run{holder}; wait for it "
                                                        "to end, or choose another --out") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd
        return self

    def __exit__(self, *exc) -> bool:
        if self.fd is not None:
            os.close(self.fd)  # closing the file drops the lock
            self.fd = None
        return False


def _holder(fd: int) -> str:
    """`` (process N)`` from the lock file, or nothing when it cannot be read."""
    try:
        pid = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return f" (process {pid})" if pid.isdigit() else ""
