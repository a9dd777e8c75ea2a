"""A file written where the user said (`report -o`, `accept --junit`, the history database):
its place checked before anything is written, the folders missing above it made, the file
whole or not at all, and the folders it made removed again when the write fails.

Missing folders are made, not refused: the page, the JUnit copy and the history have always
gone into new folders (`--junit ci/results.xml` in a fresh checkout, a `--results` folder aiio
creates on its first run), and scheduled jobs rely on it. What a failed write must not do is
leave behind folders nobody asked for.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def write_atomic(path: Path, text: str) -> Path:
    """Never leave half a file behind: write beside it, then rename. A pipe or a device
    (`-o /dev/stdout`) is written into: a rename would replace it with a file. Through a
    symlink the file goes to the file it points to, and the link stays. The temporary name
    is this process's: two commands writing one file at once each rename a whole file.
    Returns `path` as given."""
    check_place(path)
    text = _as_utf8(text)
    if path.exists() and not path.is_file():
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        return path
    end = _link_end(path) if path.is_symlink() else path
    with made_folders(end.parent):
        tmp = _temporary(end)
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, end)
        except BaseException:
            tmp.unlink(missing_ok=True)  # a file that could not take its place leaves nothing
            raise
    return path


def _as_utf8(text: str) -> str:
    """`text` as a UTF-8 reader shows it: a name that is no UTF-8 (a path's bytes, which
    Python holds as lone surrogates) with U+FFFD for each byte that is none, so the file is
    UTF-8 throughout (a JUnit parser refuses one that is not, and the write itself failed)."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no byte stands for (a hand-edited "\ud800")
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")


NAME_MAX = 255  # bytes in one file name (Linux's filesystems)


def _temporary(end: Path) -> Path:
    """The temporary file beside `end`: this process's, named after `end`, cut to fit in a
    file name however long `end`'s is (a valid name plus ".PID.tmp" may not be one)."""
    tail = f".{os.getpid()}.tmp"
    head = os.fsencode(end.name)[:NAME_MAX - 1 - len(tail)]
    return end.with_name("." + os.fsdecode(head) + tail)


def check_place(path: Path) -> None:
    """Refuse, before anything is written there, a file path that is a folder or lies under a
    file, a link to nothing or a loop of links (the rename would fail only after the file was
    written; mkdir says "File exists"): an OSError naming the place."""
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    _check_folder(path.parent)


def _check_folder(folder: Path) -> None:
    """Refuse a folder that cannot be there or be made: the first place on its way that is
    there (a link is, even when what it names is not) must be a folder."""
    above = folder
    while not os.path.lexists(above) and above != above.parent:
        above = above.parent
    if not above.is_dir():
        if above.is_symlink():
            os.stat(above)  # a link to nothing or a loop: its own error, naming it
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(above))


def _link_end(link: Path) -> Path:
    """The path a link (or a chain of links) names at last, checked as a path given itself."""
    end = Path(os.path.realpath(link))
    if end.is_symlink():  # realpath stops inside a loop: the rename would break the loop
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(link))
    check_place(end)
    return end


@contextmanager
def made_folders(folder: Path) -> Iterator[None]:
    """`folder`, and those missing above it, made for the body; when the body (or making
    them) fails, the ones made here are removed again, the deepest first and each only while
    it is empty, so a failed write leaves the tree as it found it."""
    _check_folder(folder)  # mkdir would say "File exists" of a link to nothing or a loop
    made: list[Path] = []
    try:
        for each in reversed(_missing(folder)):  # the outermost first
            try:
                each.mkdir()
            except FileExistsError:
                if not each.is_dir():
                    raise
                continue  # another process made it meanwhile: not ours to remove
            made.append(each)
        yield
    except BaseException:
        for each in reversed(made):
            try:
                each.rmdir()
            except OSError:
                break  # something was put in it meanwhile: it stays, and those above it
        raise


def _missing(folder: Path) -> list[Path]:
    """`folder` and its ancestors that do not exist yet, the deepest first."""
    out = []
    while not folder.exists() and folder != folder.parent:
        out.append(folder)
        folder = folder.parent
    return out
