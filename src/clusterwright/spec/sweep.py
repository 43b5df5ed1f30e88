"""The sweep file: a base scenario, a mode (grid or random) and the variables to vary.

```yaml
scenario: "../train-llama3-70b.yaml"      # relative to this file, or an inline mapping
mode: "grid"                              # grid: every combination; random: `samples` draws
variables:
  constraints.gpus: ["h100-sxm", "b200"]  # a list of values
  constraints.power_per_rack_kw: {min: 20, max: 60, steps: 3}
  workloads.pretrain.deadline_days: {values: [60, 90]}
```

A variable is a dotted path into the scenario; workloads are addressed by name
(``workloads.pretrain.tokens``) or index (``workloads[0].qps``). Every value is checked
by applying it to the base scenario, and so is every point, so a bad path or value is an
error naming the variable and its line before anything runs. The catalog is not known here:
``clusterwright.plan.sweep`` checks the ids the points name.
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
    model_validator,
)

from clusterwright.errors import InputError, ScenarioError
from clusterwright.spec.numbers import INTEGER, MAX_INT, NUMBER, FiniteFloat, PositiveInt
from clusterwright.spec.scenario import MAX_SEED, Scenario, load_scenario, parse_scenario
from clusterwright.spec.yamlio import (
    LoadedYaml,
    Loc,
    YamlError,
    describe_validation_error,
    format_loc,
    load,
    loads,
    short_repr,
)

MAX_POINTS = 10_000  # a sweep runs every point through the planner: keep it a sweep, not a search
MAX_VARIABLES = 50  # each value of each variable is checked against the scenario
_SIG_DIGITS = 12  # range values are rounded so 0.1 + 0.2 prints as 0.3 in the results


class SweepError(InputError):
    """A sweep file failed to parse or validate; the message names the variable and line."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# Not numbers.Int: that one turns a whole float into an int, and a range's 1.0 must stay a float.
_RangeInt = Annotated[int, NUMBER, Field(ge=-MAX_INT, le=MAX_INT)]


class VariableSpec(_Strict):
    """How one variable varies: listed ``values``, or a range ``[min, max]``.

    A grid range takes ``steps`` evenly spaced values (geometrically with ``log: true``); a
    random range draws uniformly (log-uniformly with ``log: true``). ``integer`` rounds the
    values; it defaults to true when both ends are integers.
    """

    values: list[Any] | None = Field(default=None, min_length=1, max_length=MAX_POINTS)
    # An int stays an int (it makes the values integers), so 1.0 and 1 are told apart.
    min: _RangeInt | FiniteFloat | None = None
    max: _RangeInt | FiniteFloat | None = None
    # A grid never has more points than MAX_POINTS, so neither has one variable's range.
    steps: Annotated[int, INTEGER, Field(gt=0, le=MAX_POINTS)] | None = None
    log: StrictBool = False
    integer: StrictBool | None = None

    @model_validator(mode="after")
    def _shape(self) -> VariableSpec:
        ranged = self.min is not None or self.max is not None
        if self.values is not None and (ranged or self.steps is not None or self.log):
            raise ValueError("give values, or min/max (with steps for a grid), not both")
        if self.values is None:
            if self.min is None or self.max is None:
                raise ValueError("give values, or both min and max")
            if self.max < self.min:
                raise ValueError(f"max={self.max:g} is below min={self.min:g}")
            if self.log and self.min <= 0:
                raise ValueError(f"log needs min > 0, got {self.min:g}")
        return self


def _variable(v: Any) -> Any:
    # A bare list is the values: `constraints.gpus: ["h100-sxm", "b200"]`.
    return {"values": v} if isinstance(v, list) else v


class SweepFile(_Strict):
    """The sweep file as written."""

    name: Annotated[StrictStr, Field(min_length=1)] | None = None
    description: StrictStr = ""
    scenario: Annotated[StrictStr, Field(min_length=1)] | dict[str, Any]
    mode: Literal["grid", "random"] = "grid"
    samples: PositiveInt | None = None  # random mode: how many points to draw
    # random mode: the draw; the scenario's own seed drives the sims
    seed: Annotated[int, INTEGER, Field(ge=0, le=MAX_SEED)] = 0
    quick: StrictBool = True  # trimmed simulations (fewer requests, Monte Carlo trials) per point
    variables: dict[str, Annotated[VariableSpec, Field()]] = Field(
        min_length=1, max_length=MAX_VARIABLES)

    @model_validator(mode="before")
    @classmethod
    def _lists(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("variables"), dict):
            data = dict(data)
            data["variables"] = {k: _variable(v) for k, v in data["variables"].items()}
        return data

    @model_validator(mode="after")
    def _mode(self) -> SweepFile:
        if self.mode == "random" and self.samples is None:
            raise ValueError("mode random needs samples (how many points to draw)")
        if self.mode == "grid" and self.samples is not None:
            raise ValueError("samples is for mode random; a grid runs every combination")
        return self


@dataclass(frozen=True)
class Variable:
    """One swept variable, its path resolved against the base scenario.

    ``loc`` is the place in the scenario data (``("workloads", 0, "qps")``); ``values`` the
    grid values or the pool a random draw picks from (None for a random range).
    """

    path: str
    loc: Loc
    line: int | None
    spec: VariableSpec
    values: tuple[Any, ...] | None
    value_lines: tuple[int | None, ...] = ()

    @property
    def integer(self) -> bool:
        if self.spec.integer is not None:
            return self.spec.integer
        return _is_int(self.spec.min) and _is_int(self.spec.max)


@dataclass(frozen=True)
class Point:
    """One point of a sweep: its index and the value of every variable (by path)."""

    index: int
    values: dict[str, Any]
    scenario: Scenario


@dataclass
class Sweep:
    """A validated sweep: the base scenario, the variables and every point."""

    name: str
    description: str
    source: str
    scenario_source: str | None  # path of the base scenario file; None when inline
    mode: Literal["grid", "random"]
    seed: int
    samples: int | None
    quick: bool
    base: Scenario
    base_data: dict[str, Any]
    variables: list[Variable]
    points: list[Point] = field(default_factory=list)

    def scenario_with(self, values: dict[str, Any]) -> Scenario:
        """The base scenario with some variables (by path) set; ScenarioError if invalid."""
        locs = {v.loc: values[v.path] for v in self.variables if v.path in values}
        got = _validate(apply(self.base_data, locs))
        if isinstance(got, ValidationError):
            raise ScenarioError(f"{self.source}: {_describe(got, apply(self.base_data, locs))}")
        return got


# ------------------------------------------------------------------ paths

_TOKEN = re.compile(r"^([^.\[\]]+)?((?:\[\d+\])*)$")


def split_path(path: str) -> list[str | int]:
    """``workloads[0].slo.ttft_p99_s`` -> ``["workloads", 0, "slo", "ttft_p99_s"]``."""
    parts: list[str | int] = []
    for chunk in path.split("."):
        m = _TOKEN.match(chunk)
        if not chunk or m is None or (m.group(1) is None and not parts):
            raise ValueError(f"{path!r} is not a dotted path such as constraints.gpus")
        if m.group(1) is not None:
            parts.append(m.group(1))
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return parts


def resolve_path(data: dict[str, Any], path: str) -> Loc:
    """The scenario loc a variable path names. A name inside a list of named mappings (the
    workloads) picks the item of that name; a missing key is allowed only as the last part
    or inside a mapping that is missing too (a default the scenario did not spell out)."""
    parts = split_path(path)
    loc: list[str | int] = []
    node: Any = data
    for i, p in enumerate(parts):
        here = format_loc(loc) or "the scenario"
        if isinstance(node, list):
            if isinstance(p, str):
                names = [w.get("name") for w in node if isinstance(w, dict)]
                if p in names:
                    p = names.index(p)
                elif p.isdigit() and int(p) < len(node):
                    p = int(p)
                else:
                    known = ", ".join(repr(n) for n in names if n is not None)
                    raise ValueError(f"{here} has no item named {p!r} (names: {known})")
            if p >= len(node):
                raise ValueError(f"{here} has {len(node)} items; index {p} is out of range")
            loc.append(p)
            node = node[p]
        elif isinstance(node, dict):
            if isinstance(p, int):
                raise ValueError(f"{here} is a mapping, not a list; [{p}] does not apply")
            loc.append(p)
            node = node.get(p)
        elif node is None:
            if isinstance(p, int):
                raise ValueError(f"{here} is not in the scenario; [{p}] does not apply")
            loc.append(p)
        else:
            raise ValueError(
                f"{here} is the value {node!r}, not a mapping; sweep {here} itself"
                if i else f"{path!r} does not name a field of the scenario"
            )
    return tuple(loc)


def apply(data: dict[str, Any], values: dict[Loc, Any]) -> dict[str, Any]:
    """A deep copy of the scenario data with each loc set; missing mappings are created."""
    out = copy.deepcopy(data)
    for loc, value in values.items():
        node: Any = out
        for p in loc[:-1]:
            nxt = node[int(p)] if isinstance(node, list) else node.get(p)
            if nxt is None:
                nxt = {}
                node[p] = nxt
            node = nxt
        node[loc[-1]] = copy.deepcopy(value)
    return out


# ------------------------------------------------------------------ loading


def _where(doc: LoadedYaml, loc: Loc) -> str:
    line = doc.line_of(loc)
    return f"{doc.path}: {format_loc(loc)}" + (f" (line {line})" if line else "")


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _clean(v: float, integer: bool) -> float | int:
    if integer:
        return round(v)
    return float(f"{v:.{_SIG_DIGITS}g}")


def grid_values(spec: VariableSpec, integer: bool) -> list[Any]:
    """The values a grid takes for one variable: the listed ones, or ``steps`` from min to
    max inclusive (geometric with ``log``); integers rounded, repeats dropped in order."""
    if spec.values is not None:
        return list(spec.values)
    assert spec.min is not None and spec.max is not None and spec.steps is not None
    lo, hi, n = spec.min, spec.max, spec.steps
    if n > MAX_POINTS:  # VariableSpec refuses it; a guard for specs built in code
        raise ValueError(f"steps {n:,} is more than the cap of {MAX_POINTS:,} points")
    if n == 1:
        raw = [lo]
    elif spec.log:
        raw = [math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * i / (n - 1)) for i in
               range(n)]
    else:
        raw = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
    out: list[Any] = []
    for v in raw:
        c = _clean(v, integer)
        if c not in out:
            out.append(c)
    return out


def _draw(var: Variable, rng: np.random.Generator) -> Any:
    if var.values is not None:
        return var.values[int(rng.integers(len(var.values)))]
    lo, hi = float(var.spec.min or 0.0), float(var.spec.max or 0.0)
    if var.spec.log:
        v = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    else:
        v = float(rng.uniform(lo, hi))
    return _clean(v, var.integer)


def expand(variables: list[Variable], mode: str, samples: int | None, seed: int) -> list[
        dict[str, Any]]:
    """Every point's values by variable path: the grid's combinations in file order (the
    last variable varies fastest), or ``samples`` seeded draws (numpy PCG64 from ``seed``)."""
    if mode == "grid":
        pools = [v.values or () for v in variables]
        return [
            {v.path: val for v, val in zip(variables, combo, strict=True)}
            for combo in itertools.product(*pools)
        ]
    rng = np.random.default_rng(seed)
    return [{v.path: _draw(v, rng) for v in variables} for _ in range(samples or 0)]


def _load_base(sf: SweepFile, doc: LoadedYaml) -> tuple[Scenario, LoadedYaml, str | None]:
    if isinstance(sf.scenario, str):
        path = Path(sf.scenario)
        if not path.is_absolute() and doc.path not in ("", "<sweep>"):
            path = Path(doc.path).parent / path
        if not path.is_file():
            raise SweepError(f"{_where(doc, ('scenario',))}: no scenario file {str(path)!r}")
        try:
            base, sdoc = load_scenario(path)
        except ScenarioError as exc:
            raise SweepError(f"{_where(doc, ('scenario',))}: base scenario: {exc}") from None
        return base, sdoc, str(path)
    # An inline scenario: its lines are the sweep file's, under `scenario:`.
    lines = {k[1:]: v for k, v in doc.lines.items() if k[:1] == ("scenario",)}
    sdoc = LoadedYaml(data=sf.scenario, path=doc.path, lines=lines)
    try:
        base = parse_scenario(sdoc)
    except ScenarioError as exc:
        raise SweepError(f"{doc.path}: inline scenario: {exc}".replace(
            "invalid scenario:", "invalid scenario (under scenario:):")) from None
    return base, sdoc, None


def _validate(data: dict[str, Any]) -> Scenario | ValidationError:
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        return exc


def _check_value(
    base: dict[str, Any], var: Variable, value: Any, doc: LoadedYaml, vloc: Loc
) -> Any:
    """The value as it goes into the scenario (an id where the field takes a list of ids is
    read as a one-element list), or SweepError naming the variable, value and line."""
    got = _validate(apply(base, {var.loc: value}))
    if isinstance(got, ValidationError) and isinstance(value, str):
        wrapped = _validate(apply(base, {var.loc: [value]}))
        if not isinstance(wrapped, ValidationError):
            return [value]
    if isinstance(got, ValidationError):
        raise SweepError(_value_error(var, value, got, doc, vloc, base))
    return value


def _within(err_loc: tuple[Any, ...], loc: Loc) -> bool:
    """Whether pydantic's ``err_loc`` names ``loc`` or a part of it; pydantic adds union
    member names (a workload's ``kind``) that are not in the data, so those are skipped."""
    j = 0
    for p in err_loc:
        if j < len(loc) and p == loc[j]:
            j += 1
        elif not isinstance(p, str):
            return False
    return j > 0 and bool(err_loc) and err_loc[-1] == loc[j - 1]


def _describe(exc: ValidationError, data: dict[str, Any]) -> str:
    # The data (without lines) lets the description drop pydantic's union member names.
    return describe_validation_error(exc, LoadedYaml(data=data, path="", lines={})).replace(
        "\n", "; "
    )


def _value_error(
    var: Variable, value: Any, exc: ValidationError, doc: LoadedYaml, vloc: Loc,
    base: dict[str, Any],
) -> str:
    unknown = [
        e for e in exc.errors(include_url=False)
        if e["type"] == "extra_forbidden" and _within(tuple(e["loc"]), var.loc)
    ]
    if unknown:
        return (
            f"{_where(doc, ('variables', var.path))}: variable {var.path}: not a field of the "
            "scenario"
        )
    detail = _describe(exc, apply(base, {var.loc: value}))
    return (
        f"{_where(doc, vloc)}: variable {var.path}: value {short_repr(value)} makes the "
        f"scenario invalid: {detail}"
    )


def _variable_of(path: str, spec: VariableSpec, sf: SweepFile, base: dict[str, Any],
                 doc: LoadedYaml) -> Variable:
    """The variable with its path resolved and its grid values computed (cheap arithmetic,
    at most MAX_POINTS of them) but not yet checked against the scenario."""
    vloc: Loc = ("variables", path)
    try:
        loc = resolve_path(base, path)
    except ValueError as exc:
        raise SweepError(f"{_where(doc, vloc)}: variable {path}: {exc}") from None
    if sf.mode == "grid" and spec.values is None and spec.steps is None:
        raise SweepError(f"{_where(doc, vloc)}: variable {path}: a grid range needs steps")
    if sf.mode == "random" and spec.steps is not None:
        raise SweepError(
            f"{_where(doc, (*vloc, 'steps'))}: variable {path}: steps is for mode grid; "
            "a random range draws from [min, max]"
        )
    var = Variable(path=path, loc=loc, line=doc.line_of(vloc), spec=spec, values=None)
    if spec.values is None and sf.mode == "random":
        return var
    return Variable(path=path, loc=loc, line=var.line, spec=spec,
                    values=tuple(grid_values(spec, var.integer)))


def _checked(var: Variable, base: dict[str, Any], doc: LoadedYaml) -> Variable:
    """The variable with every value checked against the base scenario (and an id where a
    list of ids goes wrapped in a list), and the line of each value; SweepError if one
    makes the scenario invalid."""
    vloc: Loc = ("variables", var.path)
    if var.values is None:
        # Both ends stand for the range: each must make a valid scenario.
        for end in ("min", "max"):
            v = getattr(var.spec, end)
            _check_value(base, var, round(v) if var.integer else v, doc, (*vloc, end))
        return var
    values, lines = [], []
    for j, v in enumerate(var.values):
        where: Loc = vloc
        for cand in ((*vloc, "values", j), (*vloc, j)):  # {values: [...]} or a bare list
            if cand in doc.lines:
                where = cand
        values.append(_check_value(base, var, v, doc, where))
        lines.append(doc.line_of(where))
    return Variable(path=var.path, loc=var.loc, line=var.line, spec=var.spec,
                    values=tuple(values), value_lines=tuple(lines))


def _count(variables: list[Variable], sf: SweepFile, doc: LoadedYaml) -> int:
    if sf.mode == "random":
        n = sf.samples or 0
        if n > MAX_POINTS:
            raise SweepError(
                f"{_where(doc, ('samples',))}: samples {n:,} is more than the cap of "
                f"{MAX_POINTS:,} points"
            )
        return n
    sizes = [len(v.values or ()) for v in variables]
    n = math.prod(sizes)
    if n > MAX_POINTS:
        biggest = max(variables, key=lambda v: len(v.values or ()))
        shape = " x ".join(f"{v.path} {len(v.values or ())}" for v in variables)
        raise SweepError(
            f"{_where(doc, ('variables', biggest.path))}: the grid has {n:,} points ({shape}), "
            f"more than the cap of {MAX_POINTS:,}; use fewer values (largest: "
            f"variable {biggest.path}) or mode random"
        )
    return n


def _display(v: Any) -> str:
    return short_repr(v) if isinstance(v, str | list | dict) else str(v)


def parse_sweep(doc: LoadedYaml) -> Sweep:
    """Validate a parsed sweep file, its base scenario, every value and every point."""
    if not isinstance(doc.data, dict):
        raise SweepError(f"{doc.path}: a sweep is a mapping with scenario, mode, variables")
    raw_vars = doc.data.get("variables")
    if isinstance(raw_vars, dict) and len(raw_vars) > MAX_VARIABLES:
        # Before pydantic, which would validate every one before counting them.
        raise SweepError(f"{_where(doc, ('variables',))}: {len(raw_vars):,} variables; a sweep "
                         f"varies at most {MAX_VARIABLES}")
    for path, v in (raw_vars.items() if isinstance(raw_vars, dict) else ()):
        if not isinstance(v, list | dict):
            raise SweepError(
                f"{_where(doc, ('variables', str(path)))}: variable {path}: give a list of "
                "values, {values: [...]}, or a range {min, max} (with steps for a grid)"
            )
    try:
        sf = SweepFile.model_validate(doc.data)
    except ValidationError as exc:
        raise SweepError(
            f"{doc.path}: invalid sweep:\n" + describe_validation_error(exc, doc)
        ) from None
    base, sdoc, scenario_source = _load_base(sf, doc)
    base_data: dict[str, Any] = sdoc.data
    variables = [_variable_of(p, s, sf, base_data, doc) for p, s in sf.variables.items()]
    seen: dict[Loc, str] = {}
    for v in variables:
        if v.loc in seen:
            raise SweepError(
                f"{_where(doc, ('variables', v.path))}: variable {v.path} names the same field "
                f"as {seen[v.loc]}"
            )
        seen[v.loc] = v.path
    # The grid's size is known before any value is checked (each check validates a whole
    # scenario), so an oversized sweep is refused at once.
    _count(variables, sf, doc)
    variables = [_checked(v, base_data, doc) for v in variables]
    points: list[Point] = []
    for i, values in enumerate(expand(variables, sf.mode, sf.samples, sf.seed)):
        data = apply(base_data, {v.loc: values[v.path] for v in variables})
        got = _validate(data)
        if isinstance(got, ValidationError):
            which = ", ".join(f"{p}={_display(val)}" for p, val in values.items())
            line = variables[0].line
            raise SweepError(
                f"{doc.path}: variables (line {line}): point {i} ({which}) makes the scenario "
                "invalid: " + _describe(got, data)
            )
        points.append(Point(index=i, values=values, scenario=got))
    name = sf.name or (Path(doc.path).stem if doc.path not in ("", "<sweep>") else base.name)
    return Sweep(
        name=name,
        description=sf.description,
        source=doc.path,
        scenario_source=scenario_source,
        mode=sf.mode,
        seed=sf.seed,
        samples=sf.samples,
        quick=sf.quick,
        base=base,
        base_data=base_data,
        variables=variables,
        points=points,
    )


def load_sweep(path: str | Path) -> Sweep:
    """Read, parse and validate a sweep file (the base scenario path is relative to it)."""
    try:
        doc = load(path)
    except YamlError as exc:
        raise SweepError(str(exc)) from None
    return parse_sweep(doc)


def loads_sweep(text: str, src: str = "<sweep>") -> Sweep:
    """As ``load_sweep``, from text; a relative scenario path is relative to ``src``'s folder."""
    try:
        doc = loads(text, src)
    except YamlError as exc:
        raise SweepError(str(exc)) from None
    return parse_sweep(doc)
