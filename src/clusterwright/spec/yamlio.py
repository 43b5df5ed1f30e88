"""Safe YAML loading that remembers the line of every value, for error messages.

PyYAML's safe loader is used (no arbitrary objects). Each scalar, list and mapping is mapped
to its 1-based line, keyed by its path, so a pydantic error at ``workloads.2.gpus`` can say
"(line 14)". Duplicate mapping keys are an error: PyYAML would silently keep the last one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.constructor import SafeConstructor

Loc = tuple[str | int, ...]
_CORE_TAG = "tag:yaml.org,2002:"
_ALLOWED_TAGS = {
    _CORE_TAG + t for t in ("map", "seq", "str", "int", "float", "bool", "null", "timestamp")
}
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


def _construct(
    node: yaml.Node, loc: Loc, lines: dict[Loc, int], src: str, ctor: SafeConstructor
) -> Any:
    lines[loc] = node.start_mark.line + 1
    where = f"{src}:{node.start_mark.line + 1}"
    if node.tag not in _ALLOWED_TAGS:
        raise YamlError(f"{where}: tag {node.tag!r} is not allowed; plain YAML data only")
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _CORE_TAG + "merge":
                raise YamlError(
                    f"{src}:{key_node.start_mark.line + 1}: merge keys (<<) are not supported; "
                    "write the fields out"
                )
            key = _construct(key_node, (*loc, "<key>"), {}, src, ctor)
            if not isinstance(key, str | int | float | bool) and key is not None:
                raise YamlError(
                    f"{src}:{key_node.start_mark.line + 1}: mapping keys must be scalars"
                )
            if key in out:
                raise YamlError(
                    f"{src}:{key_node.start_mark.line + 1}: duplicate key {key!r} in "
                    f"{_fmt(loc) or 'the top level'}"
                )
            out[key] = _construct(value_node, (*loc, str(key)), lines, src, ctor)
            # Point at the key, not at a nested block that starts on the next line.
            lines[(*loc, str(key))] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct(n, (*loc, i), lines, src, ctor) for i, n in enumerate(node.value)]
    try:
        return ctor.construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        raise YamlError(f"{where}: {getattr(exc, 'problem', None) or exc}") from None


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
    """Parse YAML text safely; raise YamlError naming ``src`` and the line on bad syntax."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f":{mark.line + 1}" if mark is not None else ""
        raise YamlError(f"{src}{where}: invalid YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"{src}: invalid YAML: {exc}") from None
    lines: dict[Loc, int] = {}
    data = None if node is None else _construct(node, (), lines, src, SafeConstructor())
    return LoadedYaml(data=data, path=src, lines=lines)


def load(path: str | Path) -> LoadedYaml:
    """Read and parse a YAML file; raise YamlError if it is missing, unreadable or invalid."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise YamlError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise YamlError(f"{p}: cannot read: {exc}") from None
    return loads(text, str(p))


def describe_validation_error(
    exc: ValidationError, doc: LoadedYaml | None, prefix: Sequence[str | int] = ()
) -> str:
    """One line per pydantic error: ``path (line N): message``. For a union, only the first
    member's complaint about a place is kept."""
    out: list[str] = []
    seen: set[Loc] = set()
    for err in exc.errors(include_url=False):
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
            msg = f"must be a string, got {err['input']!r}; quote it in YAML"
        out.append(f"{format_loc(loc) or '<top>'}{where}: {msg}")
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
