"""Load the catalog: packaged YAML, then the user's directory and files, all validated alike.

Order: package data, then every ``*.yaml``/``*.yml`` in ``$CLUSTERWRIGHT_CATALOG`` (sorted),
then each ``--catalog FILE``. An id that already exists is an error unless the new entry says
``override: true``; an override of an id that does not exist is an error too (it is a typo).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ValidationError

from clusterwright.catalog.schema import (
    Assumption,
    Cable,
    CatalogEntry,
    CloudOffer,
    FailureMode,
    Gpu,
    GridRegion,
    ModelArch,
    Nic,
    Server,
    StorageSystem,
    Switch,
    Transceiver,
)
from clusterwright.catalog.stacks import (
    CollectiveLib,
    MfuRecord,
    ServingEngine,
    Stack,
    TrainingRegime,
)
from clusterwright.errors import CatalogError, InputError, UnknownIdError
from clusterwright.spec.yamlio import LoadedYaml, YamlError, describe_validation_error, load

# One YAML file per kind, validated by one model. The CLI's `optics` kind lists both
# transceivers and cables.
ENTRY_TYPES: dict[str, type[CatalogEntry]] = {
    "gpus": Gpu,
    "servers": Server,
    "nics": Nic,
    "switches": Switch,
    "transceivers": Transceiver,
    "cables": Cable,
    "models": ModelArch,
    "clouds": CloudOffer,
    "stacks": Stack,
    "collective_libs": CollectiveLib,
    "failure_modes": FailureMode,  # packaged in data/reliability.yaml (registry TOPIC_FILES)
    "serving_engines": ServingEngine,
    # packaged in data/training_confidence.yaml (generated; registry TOPIC_FILES)
    "training_regimes": TrainingRegime,
    "mfu_records": MfuRecord,
    "storage_systems": StorageSystem,  # packaged in data/storage.yaml (registry TOPIC_FILES)
    "grid_regions": GridRegion,  # packaged in data/energy.yaml (registry TOPIC_FILES)
}

ENV_VAR = "CLUSTERWRIGHT_CATALOG"
PACKAGE_FILES = (*ENTRY_TYPES, "assumptions")
# Packaged files named after a topic rather than a kind; each may hold several kinds.
TOPIC_FILES = ("reliability", "training_confidence", "storage", "energy")

E = TypeVar("E", bound=BaseModel)


@dataclass
class Catalog:
    """All entries by kind and id, with the file each came from."""

    entries: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {kind: {} for kind in ENTRY_TYPES}
    )
    assumptions: dict[str, Assumption] = field(default_factory=dict)
    origin: dict[tuple[str, str], str] = field(default_factory=dict)

    def get(self, kind: str, entry_id: object, cls: type[E] | None = None) -> Any:
        """Entry ``entry_id`` of ``kind``; UnknownIdError with suggestions if absent."""
        table = self.entries[kind]
        if not isinstance(entry_id, str) or entry_id not in table:
            raise UnknownIdError(_singular(kind), entry_id, self.suggest(kind, entry_id))
        return table[entry_id]

    def suggest(self, kind: str, entry_id: object, n: int = 3) -> list[str]:
        ids = list(self.entries[kind])
        text = str(entry_id).lower()
        close = difflib.get_close_matches(text, ids, n=n, cutoff=0.5)
        # Prefix and substring matches catch "h100" -> "h100-sxm", which difflib ranks low.
        extra = [i for i in ids if text and (i.startswith(text) or text in i) and i not in close]
        return (close + extra)[:n]

    def gpu(self, entry_id: object) -> Gpu:
        return cast(Gpu, self.get("gpus", entry_id))

    def server(self, entry_id: object) -> Server:
        return cast(Server, self.get("servers", entry_id))

    def nic(self, entry_id: object) -> Nic:
        return cast(Nic, self.get("nics", entry_id))

    def switch(self, entry_id: object) -> Switch:
        return cast(Switch, self.get("switches", entry_id))

    def transceiver(self, entry_id: object) -> Transceiver:
        return cast(Transceiver, self.get("transceivers", entry_id))

    def cable(self, entry_id: object) -> Cable:
        return cast(Cable, self.get("cables", entry_id))

    def model(self, entry_id: object) -> ModelArch:
        return cast(ModelArch, self.get("models", entry_id))

    def cloud(self, entry_id: object) -> CloudOffer:
        return cast(CloudOffer, self.get("clouds", entry_id))

    def stack(self, entry_id: object) -> Stack:
        return cast(Stack, self.get("stacks", entry_id))

    def serving_engine(self, backend: str, version: str = "") -> ServingEngine:
        """The first engine entry of ``backend`` whose version prefixes cover ``version``
        (an empty version: the backend's first entry), as that version runs it
        (``ServingEngine.at_version``)."""
        for e in self.entries["serving_engines"].values():
            if e.backend == backend and (not version or e.covers(version)):
                return cast(ServingEngine, e).at_version(version)
        known = sorted({e.backend for e in self.entries["serving_engines"].values()})
        raise CatalogError(f"no serving engine {backend!r} at version {version!r} in the "
                           f"catalog (backends: {', '.join(known)})")

    def serving_engine_spec(self, spec: str) -> ServingEngine:
        """``name`` or ``name@version`` (``trtllm@1.2.0``): the catalog engine covering it;
        InputError naming ``engine`` otherwise (an unknown name, a bare ``name@``, a version
        no entry covers)."""
        name, _, version = spec.partition("@")
        backends = sorted({e.backend for e in self.entries["serving_engines"].values()})
        if name not in backends:
            raise InputError(f"engine: {name!r} is not one of {', '.join(backends)}",
                             field="engine")
        if "@" in spec and not version:
            raise InputError(f"engine: {spec!r} names no version after '@' (give {name} alone "
                             "for the catalog's default entry)", field="engine")
        try:
            return self.serving_engine(name, version)
        except InputError:
            raise InputError(f"engine: no {name} entry in the catalog covers version "
                             f"{version!r}", field="engine") from None

    def collective_lib(self, entry_id: object) -> CollectiveLib:
        return cast(CollectiveLib, self.get("collective_libs", entry_id))

    def failure_mode(self, entry_id: object) -> FailureMode:
        return cast(FailureMode, self.get("failure_modes", entry_id))

    def stack_for_gpu(self, gpu_id: str) -> Stack:
        """The first stack that lists ``gpu_id`` (every catalog GPU has one; a test checks)."""
        for st in self.entries["stacks"].values():
            if gpu_id in st.gpus:
                return cast(Stack, st)
        raise CatalogError(
            f"no software stack in the catalog covers GPU {gpu_id!r}: a new GPU needs one in "
            "your catalog, e.g. a copy of `catalog show generic-uncalibrated-2024 --json` "
            f"(whose efficiencies no run on {gpu_id!r} checked) with {gpu_id!r} in its gpus, "
            "or that entry with `override: true` and the GPU added")

    def assumption(self, name: str) -> float:
        """Value of a named modelling constant (see assumptions.yaml)."""
        try:
            return self.assumptions[name].value
        except KeyError:
            raise CatalogError(f"assumptions: {name!r} is not defined") from None

    def all(self, kind: str) -> list[Any]:
        return list(self.entries[kind].values())

    def check_references(self) -> None:
        """Every id an entry points to exists (a server's GPU, a cloud offer's GPU, ...)."""
        for s in self.entries["servers"].values():
            self._ref("servers", s.id, "gpu", "gpus", s.gpu)
            for part in ("backend_nics", "frontend_nics"):
                nic = getattr(s, part).nic
                if nic is not None:
                    self._ref("servers", s.id, f"{part}.nic", "nics", nic)
        for c in self.entries["clouds"].values():
            self._ref("clouds", c.id, "gpu", "gpus", c.gpu)
        for st in self.entries["stacks"].values():
            for g in st.gpus:
                self._ref("stacks", st.id, "gpus", "gpus", g)
            self._ref("stacks", st.id, "collectives", "collective_libs", st.collectives)
        for rg in self.entries["training_regimes"].values():
            self._ref("training_regimes", rg.id, "stack", "stacks", rg.stack)
        for rec in self.entries["mfu_records"].values():
            self._ref("mfu_records", rec.id, "gpu", "gpus", rec.gpu)
        for e in self.entries["serving_engines"].values():
            for g in e.moe_layer_floor_us:
                self._ref("serving_engines", e.id, "moe_layer_floor_us", "gpus", g)
            for g in e.sparse_layer_floor_us:
                self._ref("serving_engines", e.id, "sparse_layer_floor_us", "gpus", g)
            for g in e.mla_decode_kernel:
                self._ref("serving_engines", e.id, "mla_decode_kernel", "gpus", g)
            for g in e.moe_format_speedup:
                self._ref("serving_engines", e.id, "moe_format_speedup", "gpus", g)

    def _ref(self, kind: str, owner: str, fld: str, target: str, value: str) -> None:
        if value not in self.entries[target]:
            where = self.origin.get((kind, owner), "?")
            sugg = self.suggest(target, value)
            hint = f"; did you mean {', '.join(map(repr, sugg))}?" if sugg else ""
            raise CatalogError(
                f"{where}: {kind} {owner!r}: {fld}: unknown {_singular(target)} id {value!r}{hint}"
            )


def _singular(kind: str) -> str:
    return {"gpus": "GPU", "switches": "switch", "clouds": "cloud offer"}.get(kind, kind[:-1])


def _add_file(cat: Catalog, doc: LoadedYaml, allow_override: bool) -> None:
    data = doc.data
    if data is None:
        return
    if not isinstance(data, Mapping):
        raise CatalogError(
            f"{doc.path}:{doc.line_of(())}: a catalog file is a mapping of kind to a list of "
            f"entries (kinds: {', '.join(PACKAGE_FILES)})"
        )
    for kind, rows in data.items():
        line = doc.line_of((str(kind),))
        if kind == "assumptions":
            _add_assumptions(cat, doc, rows, allow_override)
            continue
        if kind not in ENTRY_TYPES:
            sugg = difflib.get_close_matches(str(kind), PACKAGE_FILES, n=1)
            hint = f"; did you mean {sugg[0]!r}?" if sugg else ""
            raise CatalogError(f"{doc.path}:{line}: unknown catalog kind {kind!r}{hint}")
        if not isinstance(rows, list):
            raise CatalogError(f"{doc.path}:{line}: {kind} must be a list of entries")
        cls = ENTRY_TYPES[kind]
        for i, row in enumerate(rows):
            loc: tuple[str | int, ...] = (kind, i)
            if not isinstance(row, dict):
                raise CatalogError(f"{doc.path}:{doc.line_of(loc)}: {kind}[{i}] must be a mapping")
            row = dict(row)
            override = row.pop("override", False)
            if not isinstance(override, bool):
                raise CatalogError(
                    f"{doc.path}:{doc.line_of((*loc, 'override'))}: {kind}[{i}].override: "
                    f"must be true or false, got {override!r}"
                )
            if override is not False and not allow_override:
                raise CatalogError(
                    f"{doc.path}:{doc.line_of(loc)}: {kind}[{i}]: packaged entries cannot override"
                )
            try:
                entry = cls.model_validate(row)
            except ValidationError as exc:
                raise CatalogError(
                    f"{doc.path}: invalid catalog entry:\n"
                    + describe_validation_error(exc, doc, prefix=loc)
                ) from None
            _register(cat, kind, entry, doc.path, doc.line_of(loc), override is True)


def _register(
    cat: Catalog, kind: str, entry: Any, path: str, line: int | None, override: bool
) -> None:
    table = cat.entries[kind]
    where = f"{path}:{line}"
    if entry.id in table and not override:
        raise CatalogError(
            f"{where}: {kind} id {entry.id!r} is already defined in "
            f"{cat.origin[(kind, entry.id)]}; add `override: true` to replace it"
        )
    if override and entry.id in table and cat.origin[(kind, entry.id)].startswith(f"{path}:"):
        raise CatalogError(
            f"{where}: {kind} id {entry.id!r} is defined twice in this file (first at "
            f"{cat.origin[(kind, entry.id)]}); `override: true` replaces an entry of another "
            "file")
    if override and entry.id not in table:
        raise CatalogError(
            f"{where}: {kind} id {entry.id!r} has `override: true` but there is nothing to "
            "override; remove the flag to add a new entry"
        )
    if override:
        entry._overrides = cat.origin[(kind, entry.id)]
    table[entry.id] = entry
    cat.origin[(kind, entry.id)] = where


def _add_assumptions(cat: Catalog, doc: LoadedYaml, rows: Any, allow_override: bool) -> None:
    if not isinstance(rows, Mapping):
        raise CatalogError(f"{doc.path}:{doc.line_of(('assumptions',))}: assumptions is a mapping")
    for name, row in rows.items():
        loc = ("assumptions", str(name))
        try:
            value = Assumption.model_validate(row)
        except ValidationError as exc:
            raise CatalogError(
                f"{doc.path}: invalid assumption:\n" + describe_validation_error(exc, doc, loc)
            ) from None
        if name in cat.assumptions and not allow_override:
            raise CatalogError(f"{doc.path}:{doc.line_of(loc)}: assumption {name!r} repeated")
        cat.assumptions[str(name)] = value


def _package_docs() -> list[LoadedYaml]:
    root = resources.files("clusterwright.catalog") / "data"
    docs = []
    for name in (*PACKAGE_FILES, *TOPIC_FILES):
        res = root / f"{name}.yaml"
        if res.is_file():
            from clusterwright.spec.yamlio import loads

            docs.append(loads(res.read_text(encoding="utf-8"), f"catalog/data/{name}.yaml"))
    return docs


def _user_paths(extra: Iterable[str | Path], env: Mapping[str, str]) -> list[Path]:
    paths: list[Path] = []
    env_dir = env.get(ENV_VAR)
    if env_dir:
        d = Path(env_dir)
        if not d.is_dir():
            raise CatalogError(f"{ENV_VAR}={env_dir}: not a directory")
        paths += sorted(p for p in d.iterdir() if p.suffix in (".yaml", ".yml"))
    paths += [Path(p) for p in extra]
    return paths


@lru_cache(maxsize=1)
def _packaged() -> Catalog:
    cat = Catalog()
    for doc in _package_docs():
        _add_file(cat, doc, allow_override=False)
    return cat


def load_catalog(
    extra_files: Iterable[str | Path] = (), env: Mapping[str, str] | None = None
) -> Catalog:
    """The packaged catalog plus the user's files. Raises CatalogError on any bad entry."""
    base = _packaged()
    user = _user_paths(extra_files, os.environ if env is None else env)
    if not user:
        base.check_references()
        return base
    cat = Catalog(
        entries={k: dict(v) for k, v in base.entries.items()},
        assumptions=dict(base.assumptions),
        origin=dict(base.origin),
    )
    for path in user:
        try:
            doc = load(path)
        except YamlError as exc:
            raise CatalogError(str(exc)) from None
        _add_file(cat, doc, allow_override=True)
    cat.check_references()
    return cat


def load_model_file(path: str | Path) -> ModelArch:
    """A model from a YAML file: the ModelArch fields at the top level, or ``models: [one]``."""
    try:
        doc = load(path)
    except YamlError as exc:
        raise CatalogError(str(exc)) from None
    data = doc.data
    prefix: tuple[str | int, ...] = ()
    if isinstance(data, Mapping) and set(data) == {"models"}:
        rows = data["models"]
        if not isinstance(rows, list) or len(rows) != 1:
            raise CatalogError(f"{path}: `models` must hold exactly one model")
        data, prefix = rows[0], ("models", 0)
    if not isinstance(data, Mapping):
        raise CatalogError(f"{path}: a model file is a mapping of ModelArch fields")
    try:
        return ModelArch.model_validate(dict(data))
    except ValidationError as exc:
        raise CatalogError(
            f"{path}: invalid model:\n" + describe_validation_error(exc, doc, prefix)
        ) from None


def resolve_model(cat: Catalog, ref: str) -> ModelArch:
    """``ref`` is a catalog id or a path to a YAML model file."""
    if ref.endswith((".yaml", ".yml")) or os.sep in ref:
        return load_model_file(ref)
    return cat.model(ref)
