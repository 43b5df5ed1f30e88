"""The scenario format described from its own pydantic models: every section, every field, its
type, default, bounds and description, read from ``Scenario.model_json_schema()``.

Two readers: ``scripts/gen_scenario_docs.py`` writes docs/scenario.md from ``sections()``, and
the web editor completes field names from ``completion()``. Both follow the models, so a new
field is documented and completed the moment it exists (and a field without a description
shows as such: ``undocumented()``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from clusterwright.spec.scenario import Scenario

Schema = dict[str, Any]


@dataclass(frozen=True)
class FieldDoc:
    """One field of a section: ``type`` as a reader writes it (``integer``, ``list of
    string``, ``one of: air, liquid``), ``default`` as YAML text (None: required), ``bounds``
    in words (``> 0, <= 131,072``), and the model a mapping value follows (``section``)."""

    name: str
    type: str
    default: str | None
    bounds: str
    description: str
    section: str | None = None  # the section (model) the value is, if a mapping
    kinds: tuple[tuple[str, str], ...] = ()  # list of tagged sections: (kind, section)

    @property
    def required(self) -> bool:
        return self.default is None


@dataclass(frozen=True)
class SectionDoc:
    """One model of the format (``Scenario``, ``TrainingWorkload``, ``Cluster``, ...), with
    the YAML paths where it appears."""

    name: str
    paths: tuple[str, ...]
    description: str
    fields: tuple[FieldDoc, ...]


def _text(s: str | None) -> str:
    # Docstring descriptions keep their line breaks; a table cell or a hint wants one line.
    return re.sub(r"\s+", " ", s or "").strip()


def _ref(s: Schema) -> str | None:
    r = s.get("$ref")
    return str(r).rsplit("/", 1)[-1] if r else None


def _options(s: Schema) -> list[Schema]:
    """The alternatives of a field's schema, ``null`` dropped (an unset optional field)."""
    alts = s.get("anyOf") or s.get("oneOf") or [s]
    return [a for a in alts if a.get("type") != "null"]


def _num(v: Any) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        v = int(v)
    return f"{v:,}" if isinstance(v, int) else f"{v:g}"


def _bounds(s: Schema) -> str:
    out = []
    for key, sym in (("gt", ">"), ("exclusiveMinimum", ">"), ("ge", ">="), ("minimum", ">="),
                     ("lt", "<"), ("exclusiveMaximum", "<"), ("le", "<="), ("maximum", "<=")):
        if key in s:
            out.append(f"{sym} {_num(s[key])}")
    for key, what in (("minLength", "characters"), ("maxLength", "characters"),
                      ("minItems", "items"), ("maxItems", "items")):
        if key in s:
            sym = ">=" if key.startswith("min") else "<="
            out.append(f"{sym} {_num(s[key])} {what}")
    return ", ".join(out)


def _type(s: Schema) -> str:
    if "const" in s:
        return f"`{s['const']}`"
    if "enum" in s:
        return "one of: " + ", ".join(str(v) for v in s["enum"])
    if (ref := _ref(s)) is not None:
        return f"mapping ({ref})"
    t = s.get("type")
    if t == "array":
        items = s.get("items", {})
        if "discriminator" in items:
            return "list of mappings (by kind)"
        return "list of " + _type(items)
    if t == "object":
        return "mapping"
    return str(t or "any")


def _field(name: str, s: Schema, required: bool = False) -> FieldDoc:
    opts = _options(s)
    type_ = " or ".join(dict.fromkeys(_type(o) for o in opts))
    bounds = "; ".join(b for b in (_bounds(o) for o in opts) if b)
    section = next((r for r in (_ref(o) for o in opts) if r), None)
    kinds: tuple[tuple[str, str], ...] = ()
    items = opts[0].get("items", {}) if opts else {}
    if "discriminator" in items:
        # In the models' order (training, inference, finetune), not the mapping's sorted one.
        mapping = items["discriminator"]["mapping"]
        by_ref = {str(v).rsplit("/", 1)[-1]: k for k, v in mapping.items()}
        refs = [r for r in (_ref(o) for o in items.get("oneOf", [])) if r in by_ref]
        kinds = tuple((by_ref[r], r) for r in refs)
    # A section built from its own defaults (pydantic's default_factory) has no "default" in
    # the schema but is not required either.
    default = _yaml(s["default"]) if "default" in s else None if required else "{}"
    return FieldDoc(name, type_, default, bounds, _text(s.get("description")), section, kinds)


def _yaml(v: Any) -> str:
    """A default as a user writes it in YAML; ``unset`` for None (the field left out)."""
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, int | float):
        return _num(v)
    return str(v)


@functools.cache
def _schema() -> Schema:
    return Scenario.model_json_schema()


def sections() -> list[SectionDoc]:
    """Every model of the scenario format, in the order a reader meets them (depth first
    from the top level), each once, with every YAML path where it appears."""
    schema = _schema()
    defs: dict[str, Schema] = schema.get("$defs", {})
    order: list[str] = []
    paths: dict[str, list[str]] = {}

    def visit(name: str, path: str) -> None:
        paths.setdefault(name, [])
        if path not in paths[name]:
            paths[name].append(path)
        if name in order:
            return
        order.append(name)
        model = schema if name == "Scenario" else defs[name]
        for fname, fs in model.get("properties", {}).items():
            f = _field(fname, fs, True)
            sub = f"{path}.{fname}" if path else fname
            for kind, target in f.kinds:
                visit(target, f"{sub}[] (kind: {kind})")
            if f.section is not None:
                visit(f.section, sub)

    visit("Scenario", "")
    out = []
    for name in order:
        model = schema if name == "Scenario" else defs[name]
        req = set(model.get("required", ()))
        fields = tuple(_field(k, v, k in req) for k, v in model.get("properties", {}).items())
        out.append(SectionDoc(name, tuple(p or "(top level)" for p in paths[name]),
                              _text(model.get("description")), fields))
    return out


def undocumented() -> list[str]:
    """``Section.field`` of every field without a description."""
    return [f"{s.name}.{f.name}" for s in sections() for f in s.fields if not f.description]


def completion() -> dict[str, Any]:
    """What the web editor completes: for each section its fields (description, type,
    default, bounds) and the section a mapping value follows, by kind for a list of tagged
    mappings. JSON-ready; ``root`` is the top-level section."""
    return {
        "root": "Scenario",
        "sections": {
            s.name: {
                f.name: {
                    "description": f.description, "type": f.type, "default": f.default,
                    "bounds": f.bounds, "section": f.section,
                    "kinds": dict(f.kinds) or None,
                }
                for f in s.fields
            }
            for s in sections()
        },
    }
