"""Where the store's database file lives by default (no dependency beyond the stdlib)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DB_FILENAME = "clusterwright.db"


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """The database file: ``$CLUSTERWRIGHT_DB``, else ``$XDG_DATA_HOME/clusterwright/``,
    else ``~/.local/share/clusterwright/`` (the XDG base-directory default)."""
    env = os.environ if env is None else env
    explicit = env.get("CLUSTERWRIGHT_DB")
    if explicit:
        return Path(explicit).expanduser()
    xdg = env.get("XDG_DATA_HOME")
    # The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "clusterwright" / DB_FILENAME
