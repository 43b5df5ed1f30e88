"""Safe YAML loading that remembers the line of every value, for error messages.

Each scalar, list and mapping is mapped to its 1-based line, keyed by its path, so a
pydantic error at ``workloads.2.gpus`` can say "(line 14)". Duplicate mapping keys are an
error: PyYAML would silently keep the last one.

The document is built from PyYAML's event stream (libyaml's parser when installed), never
from its composer or constructor, so that every cost is bounded before it is paid:

- ``MAX_BYTES``: a file or text larger than this is refused; a file is read with a cap, so
  ``/dev/zero`` or a growing file cannot exhaust memory, and anything but a regular file
  (device, FIFO, socket, directory) is refused before it is opened for reading.
- ``MAX_DEPTH``: lists and mappings nested deeper than this are refused (the builder is
  iterative, and no later recursive walk over the data can overflow the stack).
- ``MAX_NODES``: keys and values in one document, aliases expanded.
- ``MAX_ALIAS_NODES``: values produced by expanding aliases (``*name``). Each alias is a
  fresh copy of its anchor, so a "billion laughs" document of a few hundred bytes would
  otherwise expand exponentially; this budget stops it after a few milliseconds.
- ``MAX_ERROR_LINES``: problems listed by ``describe_validation_error``; a value it quotes
  is cut to a few dozen characters (``short_repr``), so no message grows with the input.

Together they keep one load of a 1 MB text under about 40 MB and 0.5 s of CPU.

Only plain data tags are allowed (no Python objects, sets, binary or merge keys). Scalars
are typed as PyYAML's YAML 1.1 safe loader types them, plus floats with an exponent that
YAML 1.1 leaves a string (``1e9``, ``15.0e12``, ``1E+9``: it wants a dot and a signed
exponent), as YAML 1.2 reads them. A quoted number stays a string.
"""

from __future__ import annotations

import os
import re
import reprlib
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

Loc = tuple[str | int, ...]

MAX_BYTES = 4 * 2**20  # 4 MiB; the largest packaged catalog file is 30 kB
MAX_DEPTH = 64  # nested lists/mappings; a scenario is about 5 deep, a catalog 4
MAX_NODES = 200_000  # keys and values, aliases expanded; about 0.5 s and 35 MB to build
MAX_ALIAS_NODES = 100_000  # values made by expanding aliases; about 20 MB of Python objects
MAX_ERROR_LINES = 20  # a validation error lists this many problems, then how many more

# Error messages quote the offending value through this: a bounded repr, however large the
# value (an aliased list of long strings would otherwise make a message of hundreds of MB).
_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 40, 40, 40
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 3
_SHORT.maxlevel = 1

_CORE_TAG = "tag:yaml.org,2002:"
_STR, _SEQ, _MAP = _CORE_TAG + "str", _CORE_TAG + "seq", _CORE_TAG + "map"
_MERGE = _CORE_TAG + "merge"
_SCALAR_TAGS = {_CORE_TAG + t for t in ("str", "int", "float", "bool", "null", "timestamp")}
# Names pydantic puts in an error's loc for a union member; they are not in the data.
_PYDANTIC_MEMBER_NAMES = {"constrained-str", "str", "int", "float", "bool", "dict[str,any]"}


@dataclass
class LoadedYaml:
    """Parsed data plus where each node came from."""

    data: Any
    path: str
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Sequence[str | int]) -> int | None:
        """Line of the deepest known prefix of ``loc`` (pydantic locs can run past the data)."""
        key = tuple(loc)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return self.lines.get((), None)


class YamlError(ValueError):
    """A YAML file could not be read or parsed; the message names the file and line."""


class _Resolver(Resolver):
    """PyYAML's YAML 1.1 implicit types, plus exponent floats without a dot (``1e9``)."""


# Appended after the YAML 1.1 resolvers, so an int stays an int; only a plain scalar with
# an exponent reaches it. YAML 1.1 needs a dot and a signed exponent (``1.0e+9``).
_Resolver.add_implicit_resolver(
    _CORE_TAG + "float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)

# libyaml's parser when PyYAML was built with it (several times faster); same events.
_Parser: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
_NO_KEY = object()
_TYPED_CACHE = 4096  # distinct scalars whose types are remembered while building one document


@dataclass
class _Anchor:
    value: Any
    loc: Loc
    log_start: int  # its nodes' (loc, line) entries are _Builder.log[log_start:log_end]
    log_end: int
    nodes: int  # values in it, aliases expanded: what one more alias to it costs
    height: int  # lists/mappings nested in it, itself included (0 for a scalar)


@dataclass
class _Frame:
    """An open list or mapping."""

    value: Any
    loc: Loc
    anchor: str | None
    nodes_start: int
    log_start: int
    height: int = 1
    key: Any = _NO_KEY  # a mapping's key waiting for its value
    key_line: int = 0


class _Builder:
    """Plain data and lines from a stream of parser events, with every cost counted."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.lines: dict[Loc, int] = {}
        # (loc, line) of each node while an anchored node is open, so an alias can copy the
        # lines of its anchor's nodes; empty for a file without anchors.
        self.log: list[tuple[Loc, int]] = []
        self.anchors: dict[str, _Anchor] = {}
        self.open_anchors: set[str] = set()
        self.stack: list[_Frame] = []
        self.nodes = 0
        self.alias_nodes = 0
        self.documents = 0
        self.root: Any = None
        self.resolver = _Resolver()
        self.ctor = SafeConstructor()
        self.typed_cache: dict[tuple[str | None, str, Any], Any] = {}

    def error(self, line: int, message: str) -> YamlError:
        return YamlError(f"{self.src}:{line}: {message}")

    def feed(self, ev: yaml.Event) -> None:
        if isinstance(ev, yaml.ScalarEvent):
            self.scalar(ev)
        elif isinstance(ev, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            self.open(ev)
        elif isinstance(ev, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            self.close()
        elif isinstance(ev, yaml.AliasEvent):
            self.alias(ev)
        elif isinstance(ev, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise self.error(_line(ev), "invalid YAML: a second document (---); a file "
                                 "holds one")

    # -- bookkeeping

    def mark(self, loc: Loc, line: int) -> None:
        self.lines[loc] = line
        if self.open_anchors:
            self.log.append((loc, line))

    def count(self, n: int, line: int) -> None:
        self.nodes += n
        if self.nodes > MAX_NODES:
            raise self.error(line, f"more than {MAX_NODES:,} keys and values in one "
                             "document; split the file")

    def slot(self) -> Loc | None:
        """The loc of the next node, or None when it is a mapping's key."""
        if not self.stack:
            return ()
        top = self.stack[-1]
        if isinstance(top.value, dict):
            return None if top.key is _NO_KEY else (*top.loc, str(top.key))
        return (*top.loc, len(top.value))

    def attach(self, value: Any, height: int) -> None:
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        top.height = max(top.height, height + 1)
        if isinstance(top.value, dict):
            top.value[top.key] = value
            # Point at the key, not at a nested block that starts on the next line.
            self.mark((*top.loc, str(top.key)), top.key_line)
            top.key = _NO_KEY
        else:
            top.value.append(value)

    def set_key(self, key: Any, line: int) -> None:
        top = self.stack[-1]
        if not isinstance(key, str | int | float | bool) and key is not None:
            raise self.error(line, "mapping keys must be scalars")
        if key in top.value:
            raise self.error(line, f"duplicate key {short_repr(key)} in "
                             f"{_fmt(top.loc) or 'the top level'}")
        top.key, top.key_line = key, line

    # -- nodes

    def scalar(self, ev: yaml.ScalarEvent) -> None:
        line = _line(ev)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self.count(0, line)
        key = (ev.tag, ev.value, ev.implicit)
        value = self.typed_cache[key] if key in self.typed_cache else self.typed(ev, line)
        loc = self.slot()
        if loc is None:
            self.set_key(value, line)
            return
        self.mark(loc, line)
        if ev.anchor is not None:
            n = len(self.log)
            self.anchors[ev.anchor] = _Anchor(value, loc, n, n, 1, 0)
        self.attach(value, 0)

    def typed(self, ev: yaml.ScalarEvent, line: int) -> Any:
        """The scalar's value, typed by its tag or the implicit resolvers. Plain scalars
        repeat (ids, small numbers) and typing one runs a dozen regular expressions, so
        typed values are cached."""
        tag = ev.tag
        if tag is None:
            tag = self.resolver.resolve(  # type: ignore[no-untyped-call]
                yaml.ScalarNode, ev.value, ev.implicit)
        elif tag == "!":  # the non-specific tag: a string (YAML 1.1 section 3.3.2)
            tag = _STR
        if tag == _MERGE and self.slot() is None:
            raise self.error(line, "merge keys (<<) are not supported; write the fields out")
        if tag not in _SCALAR_TAGS:
            raise self.error(line, f"tag {short_repr(tag)} is not allowed; plain YAML data only")
        out = ev.value if tag == _STR else self.construct(tag, ev, line)
        if len(self.typed_cache) < _TYPED_CACHE and len(ev.value) <= 64:
            # Scalars are immutable, so sharing them is safe.
            self.typed_cache[(ev.tag, ev.value, ev.implicit)] = out
        return out

    def construct(self, tag: str, ev: yaml.ScalarEvent, line: int) -> Any:
        # libyaml's marks are not PyYAML's Mark class; the constructors only read .line.
        node = yaml.ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark)  # type: ignore[arg-type]
        try:
            return SafeConstructor.yaml_constructors[tag](self.ctor, node)
        except yaml.YAMLError as exc:
            raise self.error(line, str(getattr(exc, "problem", None) or exc)) from None
        except (ValueError, OverflowError) as exc:
            # e.g. a timestamp on 30 February, an integer of more than 4,300 digits
            kind = tag.removeprefix(_CORE_TAG)
            raise self.error(line, f"{ev.value[:40]!r} is not a valid {kind}: {exc}") from None

    def open(self, ev: yaml.MappingStartEvent | yaml.SequenceStartEvent) -> None:
        line = _line(ev)
        is_map = isinstance(ev, yaml.MappingStartEvent)
        if ev.tag not in (None, "!", _MAP if is_map else _SEQ):
            raise self.error(line, f"tag {short_repr(ev.tag)} is not allowed; plain YAML data "
                             "only")
        loc = self.slot()
        if loc is None:
            raise self.error(line, "mapping keys must be scalars")
        if len(self.stack) >= MAX_DEPTH:
            raise self.error(line, f"lists and mappings nest more than {MAX_DEPTH} deep")
        self.count(1, line)
        if ev.anchor is not None:
            self.open_anchors.add(ev.anchor)
        self.mark(loc, line)
        self.stack.append(_Frame({} if is_map else [], loc, ev.anchor, self.nodes - 1,
                                 len(self.log) - 1))

    def close(self) -> None:
        fr = self.stack.pop()
        if fr.anchor is not None:
            self.open_anchors.discard(fr.anchor)
            self.anchors[fr.anchor] = _Anchor(fr.value, fr.loc, fr.log_start, len(self.log),
                                              self.nodes - fr.nodes_start, fr.height)
        self.attach(fr.value, fr.height)

    def alias(self, ev: yaml.AliasEvent) -> None:
        line = _line(ev)
        name = str(ev.anchor)
        if name in self.open_anchors:
            raise self.error(line, f"invalid YAML: alias *{name[:40]} inside the node it names")
        a = self.anchors.get(name)
        if a is None:
            raise self.error(line, f"invalid YAML: found undefined alias {short_repr(name)}")
        self.alias_nodes += a.nodes
        if self.alias_nodes > MAX_ALIAS_NODES:
            raise self.error(line, f"aliases expand to more than {MAX_ALIAS_NODES:,} values; "
                             "write the data out instead")
        self.count(a.nodes, line)
        loc = self.slot()
        if loc is None:
            if a.height:
                raise self.error(line, "mapping keys must be scalars")
            self.set_key(a.value, line)
            return
        if len(self.stack) + a.height > MAX_DEPTH:
            raise self.error(line, f"lists and mappings nest more than {MAX_DEPTH} deep")
        self.mark(loc, line)
        cut = len(a.loc)
        for sub, ln in self.log[a.log_start + 1:a.log_end]:
            self.mark((*loc, *sub[cut:]), ln)
        self.attach(_fresh(a.value), a.height)


def _line(ev: yaml.Event) -> int:
    return int(ev.start_mark.line) + 1 if ev.start_mark is not None else 0


def _fresh(v: Any) -> Any:
    """A copy sharing no list or mapping (an alias is an independent copy of its anchor, so
    that changing one place, as a sweep does, changes only that place). Recursion is
    bounded by MAX_DEPTH."""
    if isinstance(v, dict):
        return {k: _fresh(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_fresh(x) for x in v]
    return v


def _fmt(loc: Sequence[str | int]) -> str:
    parts: list[str] = []
    for p in loc:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts)


def format_loc(loc: Sequence[str | int]) -> str:
    """``("workloads", 2, "gpus")`` -> ``workloads[2].gpus``."""
    return _fmt(loc)


def parse_loc(path: str) -> tuple[str | int, ...]:
    """``workloads[2].gpus`` -> ``("workloads", 2, "gpus")`` (the inverse of format_loc)."""
    out: list[str | int] = []
    for part in path.split("."):
        name, _, rest = part.partition("[")
        if name:
            out.append(name)
        for idx in filter(None, rest.replace("]", "").split("[")):
            out.append(int(idx) if idx.isdigit() else idx)
    return tuple(out)


def loads(text: str, src: str = "<string>") -> LoadedYaml:
    """Parse YAML text safely; raise YamlError naming ``src`` and the line on bad syntax or
    when the text passes a limit (``MAX_BYTES`` characters, ``MAX_DEPTH``, ``MAX_NODES``,
    ``MAX_ALIAS_NODES``)."""
    if len(text) > MAX_BYTES:
        raise YamlError(f"{src}: {len(text):,} characters is more than the limit of "
                        f"{MAX_BYTES:,}")
    b = _Builder(src)
    parser = _Parser(text)
    try:
        while parser.check_event():
            b.feed(parser.get_event())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f":{mark.line + 1}" if mark is not None else ""
        raise YamlError(f"{src}{where}: invalid YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"{src}: invalid YAML: {exc}") from None
    except RecursionError:  # not expected (nothing recurses past MAX_DEPTH); never a traceback
        raise YamlError(f"{src}: invalid YAML: nested too deeply") from None
    finally:
        parser.dispose()
    return LoadedYaml(data=b.root, path=src, lines=b.lines)


def read_text(path: str | Path, limit: int | None = None) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes (default ``MAX_BYTES``);
    YamlError otherwise.

    The file's kind is checked before it is opened (opening a FIFO for reading waits for a
    writer) and again on the open descriptor, and at most ``limit + 1`` bytes are read, so a
    device such as ``/dev/zero`` or a file growing meanwhile cannot exhaust memory."""
    p = Path(path)
    limit = MAX_BYTES if limit is None else limit
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise YamlError(f"{p}: no such file") from None
    except OSError as exc:
        raise YamlError(f"{p}: cannot read: {exc.strerror or exc}") from None
    _regular(p, st.st_mode)
    if st.st_size > limit:
        raise _too_big(p, limit)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            _regular(p, os.fstat(fh.fileno()).st_mode)
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise YamlError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise _too_big(p, limit)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlError(f"{p}: cannot read: not UTF-8 text ({exc.reason} at byte "
                        f"{exc.start})") from None


def _regular(p: Path, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise YamlError(f"{p}: cannot read: a directory, not a file")
    if not stat.S_ISREG(mode):
        raise YamlError(f"{p}: cannot read: not a regular file (a device, FIFO or socket)")


def _too_big(p: Path, limit: int) -> YamlError:
    return YamlError(f"{p}: cannot read: larger than the limit of {limit:,} bytes "
                     f"({limit / 2**20:g} MiB) for this input")


def load(path: str | Path) -> LoadedYaml:
    """Read and parse a YAML file; raise YamlError if it is missing, not a regular file,
    larger than ``MAX_BYTES``, unreadable or invalid."""
    return loads(read_text(path), str(Path(path)))


def short_repr(value: object) -> str:
    """``repr(value)`` cut to a few dozen characters and items, for error messages."""
    return _SHORT.repr(value)


def describe_validation_error(
    exc: ValidationError, doc: LoadedYaml | None, prefix: Sequence[str | int] = ()
) -> str:
    """One line per pydantic error: ``path (line N): message``, at most ``MAX_ERROR_LINES``
    of them. For a union, only the first member's complaint about a place is kept."""
    out: list[str] = []
    seen: set[Loc] = set()
    more = 0
    for err in exc.errors(include_url=False, include_input=True, include_context=False):
        if len(out) >= MAX_ERROR_LINES:
            more += 1
            continue
        raw = tuple(prefix) + tuple(p for p in err["loc"] if not _is_union_tag(p))
        loc = _data_loc(raw, doc)
        if loc in seen:
            continue
        seen.add(loc)
        line = doc.line_of(loc) if doc is not None else None
        where = f" (line {line})" if line is not None else ""
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "required field is missing"
        elif err["type"] == "string_type" and "input" in err:
            msg = f"must be a string, got {short_repr(err['input'])}; quote it in YAML"
        out.append(f"{format_loc(loc) or '<top>'}{where}: {msg}")
    if more:
        out.append(f"... and {more:,} more")
    return "\n".join(out)


def _data_loc(loc: Loc, doc: LoadedYaml | None) -> Loc:
    """Drop loc parts that are not in the data: a discriminated union's tag (pydantic reports
    ``workloads.1.inference.qps`` for ``workloads[1].qps``), whose value is the ``kind`` of
    the mapping it follows."""
    if doc is None:
        return loc
    out: list[str | int] = []
    node: Any = doc.data
    for p in loc:
        if (
            isinstance(p, str)
            and isinstance(node, dict)
            and p not in node
            and node.get("kind") == p
        ):
            continue
        out.append(p)
        if isinstance(node, dict):
            node = node.get(p)
        elif isinstance(node, list) and isinstance(p, int) and 0 <= p < len(node):
            node = node[p]
        else:
            node = None
    return tuple(out)


def _is_union_tag(p: object) -> bool:
    # pydantic puts the union member name in the loc (e.g. "function-after[...]"); drop it.
    return isinstance(p, str) and (
        "[" in p or p.startswith("function-") or p in _PYDANTIC_MEMBER_NAMES
    )
