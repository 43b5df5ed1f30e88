"""Errors a user can act on. The CLI turns every one of them into exit code 2."""

from __future__ import annotations

import re
from collections.abc import Callable

# A field named inside a message body, as `su_hosts`: each face replaces it with its own word
# (a CLI flag, a scenario path) through ``word_fields``.
_MENTION = re.compile(r"`([a-z][a-z0-9_.]*)`")


def word_fields(message: str, word: Callable[[str], str]) -> str:
    """``message`` with every `field` mention replaced by ``word(field)``."""
    return _MENTION.sub(lambda m: word(m.group(1)), message)


class ClusterwrightError(Exception):
    """Base class: a message that names the bad field or flag and, where known, the fix."""


class InputError(ClusterwrightError):
    """Bad input: a field, flag or file the user controls. ``field`` is the field's path
    (``schedule``, ``workloads[0].gpus``) when one is to blame, so each face can name it in
    its own terms (a CLI flag, a YAML line)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class InfeasibleError(InputError):
    """Well-formed input that no design meets, with the fact that ruled it out as ``reason``
    (``memory``, ``nvlink_domain``, ``heads_not_divisible``, ``request_too_long``,
    ``no_serving_calibration``, ``precision``), set where the fact is known, so a planner
    that tries many candidates counts rejections without reading messages."""

    def __init__(self, message: str, reason: str, field: str | None = None) -> None:
        super().__init__(message, field)
        self.reason = reason


def rejection_reason(exc: Exception) -> str:
    """The ``reason`` of an ``InfeasibleError``, ``other`` for any other error."""
    return exc.reason if isinstance(exc, InfeasibleError) else "other"


class ScenarioError(InputError):
    """A scenario file failed to parse or validate."""


class CatalogError(InputError):
    """A catalog file failed to parse or validate, or an id is unknown or duplicated."""


class UnknownIdError(CatalogError):
    """An id not in the catalog, with the closest ids as suggestions."""

    def __init__(self, kind: str, entry_id: object, suggestions: list[str]) -> None:
        self.kind = kind
        self.entry_id = entry_id
        self.suggestions = suggestions
        hint = f"; did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        super().__init__(f"unknown {kind} id {entry_id!r}{hint}")
