"""The store's error type."""

from __future__ import annotations

from clusterwright.errors import ClusterwrightError


class StoreError(ClusterwrightError):
    """The database could not be opened or read, or an id is absent; names the path or id."""
