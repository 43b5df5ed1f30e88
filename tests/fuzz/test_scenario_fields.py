"""Every field of every shipped scenario, mutated one at a time.

A number becomes infinite, not-a-number, negative, a boolean, a quoted string or a list; a
string becomes a list, a map or a number; a boolean becomes a string. ``check`` must refuse
each of those with exit 2 naming the field and its line. Mutations ``check`` accepts must plan
without a crash and with finite numbers (a hypothesis sample: a plan takes seconds).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import REPO, invoke, problems

SCENARIOS = sorted(
    str(p.relative_to(REPO))
    for p in [*REPO.glob("examples/*.yaml"), *REPO.glob("examples/*/scenario.yaml")]
)

Path_ = tuple[str | int, ...]

# YAML text for each replacement, by the type of the value it replaces; all must be refused.
NUMBER_SUBSTITUTES = [".inf", ".nan", "-1", "true", "'8'", "[1, 2]"]
LONG_NUMBER_SUBSTITUTES = ["-.inf", "1e400", "{a: 1}", "2e9999"]
STRING_SUBSTITUTES = ["[a, b]", "{a: 1}", "5", "true", "''"]
BOOL_SUBSTITUTES = ["'yes'", "2", "[true]"]
# Keys whose strings are free text: any string, including the empty one, is a value.
FREE_TEXT_KEYS = {"description", "notes", "comment"}


_NUMBER = re.compile(r"[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?")


@dataclass(frozen=True)
class Leaf:
    """One scalar of a scenario file: where it is and how it is written."""

    scenario: str
    path: Path_
    start: int  # character offsets of the scalar in the file
    end: int
    text: str

    @property
    def kind(self) -> str:
        if self.text in ("true", "false"):
            return "bool"
        if _NUMBER.fullmatch(self.text):
            return "number"
        return "string"

    def replaced(self, yaml_text: str) -> str:
        """The scenario file with this scalar rewritten as ``yaml_text``; the rest byte for
        byte as shipped."""
        src = (REPO / self.scenario).read_text(encoding="utf-8")
        return src[: self.start] + yaml_text + src[self.end:]


def _leaves(scenario: str) -> Iterator[Leaf]:
    src = (REPO / scenario).read_text(encoding="utf-8")

    def walk(node: yaml.Node, path: Path_) -> Iterator[Leaf]:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                yield from walk(v, (*path, k.value))
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                yield from walk(v, (*path, i))
        else:
            a, b = node.start_mark.index, node.end_mark.index
            yield Leaf(scenario, path, a, b, src[a:b])

    root = yaml.compose(src, Loader=yaml.SafeLoader)
    if root is not None:
        yield from walk(root, ())


def substitutes(leaf: Leaf) -> list[str]:
    if leaf.kind == "bool":
        return BOOL_SUBSTITUTES
    if leaf.kind == "number":
        return NUMBER_SUBSTITUTES + (LONG_NUMBER_SUBSTITUTES if LONG else [])
    if leaf.path[-1] in FREE_TEXT_KEYS:
        return [s for s in STRING_SUBSTITUTES if s != "''"]
    return STRING_SUBSTITUTES


def _loc(path: Path_) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


LONG = os.environ.get("CW_FUZZ") == "long"
_ALL = [leaf for sc in SCENARIOS for leaf in _leaves(sc) if leaf.path[:1] != ("version",)]


def _schema_key(leaf: Leaf) -> tuple[object, ...]:
    # The same field in another list item or another example is the same code path; the
    # long run tries every occurrence.
    return (tuple(0 if isinstance(p, int) else p for p in leaf.path), leaf.kind)


CASES = _ALL if LONG else list({_schema_key(c): c for c in reversed(_ALL)}.values())[::-1]


def _id(leaf: Leaf) -> str:
    name = Path(leaf.scenario)
    return f"{name.parent.name if name.name == 'scenario.yaml' else name.stem}:{_loc(leaf.path)}"


@pytest.mark.parametrize("leaf", CASES, ids=_id)
def test_check_refuses_wrongly_typed_fields(leaf: Leaf, tmp_path: Path) -> None:
    found = []
    # The error names the field (its last name, or list index) and a line.
    last = leaf.path[-1]
    name = re.escape(last if isinstance(last, str) else f"[{last}]")
    f = tmp_path / "s.yaml"
    for sub in substitutes(leaf):
        f.write_text(leaf.replaced(sub), encoding="utf-8")
        o = invoke(["check", str(f)])
        bad = problems(o, must_refuse=True)
        if o.exit_code == 2 and not (re.search(name, o.stderr) and "line" in o.stderr):
            bad.append("the message does not name the field and its line")
        found += [f"{_loc(leaf.path)} = {sub}: {b}\n  {o.stderr.strip()[:300]}" for b in bad]
    assert not found, "\n".join(found)


# Replacements a user could mean: other in-range numbers, other strings.
_PLAUSIBLE_NUMBERS = st.sampled_from([0, 1, 2, 3, 7, 1000, 0.5, 1e-6, 1e6, 1e12])


@settings(deadline=None, max_examples=60 if LONG else 6)
@given(data=st.data())
def test_accepted_mutations_plan_without_crash(data: st.DataObject,
                                               tmp_path_factory: pytest.TempPathFactory) -> None:
    leaf = data.draw(st.sampled_from([c for c in CASES if c.kind == "number"]), label="field")
    new = data.draw(_PLAUSIBLE_NUMBERS, label="value")
    tmp = tmp_path_factory.mktemp("plan")
    f = tmp / "s.yaml"
    f.write_text(leaf.replaced(repr(new)), encoding="utf-8")
    checked = invoke(["check", str(f)])
    assert not problems(checked), checked.describe()
    if checked.exit_code != 0:
        return
    o = invoke(["runs", "save-scenario", str(f), "--db", str(tmp / "cw.db"), "--json"])
    assert o.exit_code == 0, o.describe()
    sid = json.loads(o.stdout)["id"]
    o = invoke(["runs", "plan", str(sid), "--db", str(tmp / "cw.db"), "--quick", "--json"],
               timeout_s=60)
    assert not problems(o), o.describe()
