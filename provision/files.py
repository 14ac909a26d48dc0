"""Files a user or a spec names (the spec itself, a repository's signing key, an ssh key): read within limits.

A path is opened without blocking and without a controlling tty, and refused unless it is a regular file, so a FIFO
never hangs a command and /dev/zero never fills memory; at most `limit` bytes are read. A path too long for the
filesystem (a name over 255 bytes, a path over 4095) is refused in words before any system call sees it.
"""
from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from provision.errors import UsageError
from provision.limits import MAX_NAME_BYTES, MAX_PATH_BYTES, clip


class UnreadableFile(UsageError):
    """A named file is missing, unreadable, not a regular file or too large; the message names the path."""


@dataclass(frozen=True)
class FileKind:
    """What a file is meant to be, for the messages: 'a spec', and the fixes for a wrong path or a too large file."""

    name: str
    fix: str
    size_fix: str


def shown(path: Path | str) -> str:
    """A path as printed in a message: cut if long, control characters escaped."""
    text = str(path)
    return text if text.isprintable() and len(text) <= 200 else clip(text, 200)


def path_problem(path: Path | str) -> str | None:
    """Why the filesystem would refuse this path for its length (a name over 255 bytes, the whole over 4095), or
    None; an absent path ('') and a path with a NUL byte are left to the caller."""
    data = os.fsencode(str(path))
    if len(data) > MAX_PATH_BYTES:
        return f"is {len(data)} bytes long; a path has at most {MAX_PATH_BYTES}"
    longest = max(data.split(b"/"), key=len)
    if len(longest) > MAX_NAME_BYTES:
        return f"has a name of {len(longest)} bytes ({clip(os.fsdecode(longest), 40)}); a name has at most " \
               f"{MAX_NAME_BYTES}"
    return None


def read_regular(path: Path, limit: int, kind: FileKind) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; UnreadableFile for anything else."""
    fd = open_regular(path, kind)
    try:
        info = os.fstat(fd)
        if info.st_size > limit:
            raise UnreadableFile(f"{shown(path)}: is {info.st_size} bytes; {kind.name} is at most {limit}",
                                 hint=kind.size_fix)
        data = _read_at_most(fd, limit + 1)
    except OSError as exc:
        raise UnreadableFile(f"{shown(path)}: cannot be read ({exc.strerror})", hint="check permissions") from exc
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UnreadableFile(f"{shown(path)}: is larger than {limit} bytes, the most {kind.name} may be",
                             hint=kind.size_fix)
    return data


def check_regular(path: Path, kind: FileKind) -> None:
    """That a path is a regular file this process can open (nothing is read)."""
    os.close(open_regular(path, kind))


def open_regular(path: Path, kind: FileKind) -> int:
    """An open descriptor of a regular file; UnreadableFile names what the path is instead."""
    problem = path_problem(path)
    if problem:
        raise UnreadableFile(f"{shown(path)}: {problem}", hint="choose a shorter path")
    fd = _open(path, kind)
    try:
        _check_kind(path, os.fstat(fd), kind)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open(path: Path, kind: FileKind) -> int:
    """Open for reading without blocking (a FIFO with no writer returns at once) and without a controlling tty."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        raise UnreadableFile(f"{shown(path)}: no such file", hint=kind.fix) from None
    except ValueError:  # a NUL byte in the path
        raise UnreadableFile(f"{shown(path)}: is not a usable path", hint=kind.fix) from None
    except OSError as exc:
        hint = "check the permissions of the file and of its directories" if exc.errno in (errno.EACCES, errno.EPERM) \
            else kind.fix
        raise UnreadableFile(f"{shown(path)}: cannot be read ({exc.strerror})", hint=hint) from None


def _check_kind(path: Path, info: os.stat_result, kind: FileKind) -> None:
    """Only a regular file will do."""
    if stat.S_ISDIR(info.st_mode):
        raise UnreadableFile(f"{shown(path)}: is a directory, not {kind.name} file", hint=kind.fix)
    if not stat.S_ISREG(info.st_mode):
        what = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device" if stat.S_ISCHR(info.st_mode) or \
            stat.S_ISBLK(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file"
        raise UnreadableFile(f"{shown(path)}: is {what}, not a regular file", hint=kind.fix)


def _read_at_most(fd: int, limit: int) -> bytes:
    """Read until end of file or `limit` bytes, whichever comes first."""
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(65536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
