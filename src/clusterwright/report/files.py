"""Writing a report file so that a reader never sees half of one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_file(path: Path, suffix: str) -> Iterator[str]:
    """A temporary path beside ``path`` to write to. When the block ends, the file is made as
    readable as any file written here (mkstemp makes it private, 0600) and moved into place;
    when it raises, the temporary file is removed and ``path`` is untouched."""
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=suffix, dir=path.parent or ".")
    os.close(fd)
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


__all__ = ["atomic_file"]
