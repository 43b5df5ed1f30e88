"""Resolve a scenario's catalog references (models, GPUs, servers, priced servers, cloud
provider and offer) against a catalog."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import CloudOffer, ModelArch, Server
from clusterwright.errors import InputError, ScenarioError, UnknownIdError
from clusterwright.spec.pricing import CloudPolicy
from clusterwright.spec.scenario import InferenceWorkload, Scenario
from clusterwright.spec.yamlio import LoadedYaml, describe_validation_error, format_loc


def _where(doc: LoadedYaml | None, loc: tuple[str | int, ...]) -> str:
    line = doc.line_of(loc) if doc is not None else None
    path = doc.path if doc is not None else "<scenario>"
    return f"{path}: {format_loc(loc)}" + (f" (line {line})" if line else "")


def _field(doc: LoadedYaml | None, loc: tuple[str | int, ...]) -> str:
    """A second field of the same message: its path and line, without the file name."""
    line = doc.line_of(loc) if doc is not None else None
    return format_loc(loc) + (f" (line {line})" if line else "")


def workload_model(
    cat: Catalog, ref: str | dict[str, Any], doc: LoadedYaml | None, loc: tuple[str | int, ...]
) -> ModelArch:
    """The ModelArch a workload names: a catalog id or an inline mapping."""
    if isinstance(ref, str):
        try:
            return cat.model(ref)
        except UnknownIdError as exc:
            raise ScenarioError(f"{_where(doc, loc)}: {exc}") from None
    try:
        return ModelArch.model_validate(ref)
    except ValidationError as exc:
        raise ScenarioError(
            f"{doc.path if doc else '<scenario>'}: invalid inline model:\n"
            + describe_validation_error(exc, doc, prefix=loc)
        ) from None


def resolve(
    scenario: Scenario, cat: Catalog, doc: LoadedYaml | None = None
) -> dict[str, ModelArch]:
    """Check every id the scenario names; return each workload's model by workload name."""
    models: dict[str, ModelArch] = {}
    for i, w in enumerate(scenario.workloads):
        models[w.name] = workload_model(cat, w.model, doc, ("workloads", i, "model"))
        if isinstance(w, InferenceWorkload):
            _fits_context(w, models[w.name], doc, i)
            if w.engine is not None:
                _engine_ref(cat, w.engine, doc, i)
        stack = getattr(w, "stack", None)
        if stack is not None:
            try:
                cat.stack(stack)
            except UnknownIdError as exc:
                raise ScenarioError(f"{_where(doc, ('workloads', i, 'stack'))}: {exc}") from None
    c = scenario.constraints
    if isinstance(c.gpus, list):
        for j, g in enumerate(c.gpus):
            try:
                cat.gpu(g)
            except UnknownIdError as exc:
                raise ScenarioError(f"{_where(doc, ('constraints', 'gpus', j))}: {exc}") from None
    for j, s in enumerate(c.servers or []):
        try:
            cat.server(s)
        except UnknownIdError as exc:
            raise ScenarioError(f"{_where(doc, ('constraints', 'servers', j))}: {exc}") from None
    _gpus_match_servers(scenario, cat, doc)
    _cluster_fits_servers(scenario, cat, doc)
    _fabric_switch(scenario, cat, doc)
    _pricing_refs(scenario, cat, doc)
    _storage_energy_refs(scenario, cat, doc)
    return models


def _storage_energy_refs(scenario: Scenario, cat: Catalog, doc: LoadedYaml | None) -> None:
    """``storage.system`` names a catalog storage system (``storage.units`` needs it);
    ``energy.region`` a catalog grid region with ``energy.year`` among its years."""
    s = scenario.storage
    if s.system is not None:
        try:
            cat.get("storage_systems", s.system)
        except UnknownIdError as exc:
            raise ScenarioError(f"{_where(doc, ('storage', 'system'))}: {exc}") from None
    elif s.units is not None:
        raise ScenarioError(f"{_where(doc, ('storage', 'units'))}: needs storage.system (units "
                            "of which storage system)")
    if s.system is not None and cat.get("storage_systems", s.system).kind == "local-nvme":
        raise ScenarioError(f"{_where(doc, ('storage', 'system'))}: {s.system} is the NVMe "
                            "inside each GPU server, not a shared tier; give it as "
                            "storage.local_nvme")
    if s.local_nvme is not None:
        try:
            loc = cat.get("storage_systems", s.local_nvme)
        except UnknownIdError as exc:
            raise ScenarioError(f"{_where(doc, ('storage', 'local_nvme'))}: {exc}") from None
        if loc.kind != "local-nvme":
            raise ScenarioError(f"{_where(doc, ('storage', 'local_nvme'))}: {loc.id} is of "
                                f"kind {loc.kind}, not local-nvme (NVMe inside the GPU servers)")
    if s.data_request_kb is not None and s.data_file_mb is None:
        raise ScenarioError(f"{_where(doc, ('storage', 'data_request_kb'))}: needs "
                            "storage.data_file_mb (requests of which files)")
    e = scenario.energy
    if "grid_regions" not in cat.entries:
        return
    if e.region is not None:
        try:
            cat.get("grid_regions", e.region)
        except UnknownIdError as exc:
            raise ScenarioError(f"{_where(doc, ('energy', 'region'))}: {exc}") from None
    if e.year is not None:
        region = e.region or "world"
        years = sorted(int(y) for g in cat.all("grid_regions") if g.id == region
                       for y in g.gco2_per_kwh)
        if years and e.year not in years:
            raise ScenarioError(
                f"{_where(doc, ('energy', 'year'))}: the catalog has grid intensity for "
                f"{region} in {', '.join(map(str, years))}, not {e.year}")


def _fabric_switch(scenario: Scenario, cat: Catalog, doc: LoadedYaml | None) -> None:
    """``fabric.switch`` is a catalog backend switch that speaks ``fabric.protocol``."""
    f = scenario.fabric
    if f.switch is None:
        return
    where = _where(doc, ("fabric", "switch"))
    try:
        sw = cat.switch(f.switch)
    except UnknownIdError as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    if "backend" not in sw.roles:
        raise ScenarioError(f"{where}: {sw.id} is not a backend switch (its roles: "
                            f"{', '.join(sw.roles)})")
    if f.protocol is not None and sw.protocol != f.protocol:
        raise ScenarioError(
            f"{where}: {sw.id} speaks {sw.protocol}, but "
            f"{_field(doc, ('fabric', 'protocol'))} asks for {f.protocol}; name an "
            f"{f.protocol} switch or drop one of the two"
        )


def _engine_ref(cat: Catalog, spec: str, doc: LoadedYaml | None, i: int) -> None:
    """``engine`` names a catalog serving engine (``name`` or ``name@version``)."""
    try:
        cat.serving_engine_spec(spec)
    except InputError as exc:
        reason = str(exc).removeprefix("engine: ")
        raise ScenarioError(f"{_where(doc, ('workloads', i, 'engine'))}: {reason}") from None


def _fits_context(w: InferenceWorkload, arch: ModelArch, doc: LoadedYaml | None,
                  i: int) -> None:
    """A mean request (prompt plus output, as the serving planner sizes it) fits the model's
    context; no GPU choice can serve a longer one."""
    inp, out = max(1, round(w.input_len.mean)), max(1, round(w.output_len.mean))
    if inp + out > arch.max_seq_len:
        raise ScenarioError(
            f"{_where(doc, ('workloads', i, 'input_len'))}: a mean request of {inp:,} + "
            f"{out:,} = {inp + out:,} tokens (input_len + output_len) exceeds the "
            f"{arch.max_seq_len:,}-token context of {arch.id}"
        )


def _gpus_match_servers(scenario: Scenario, cat: Catalog, doc: LoadedYaml | None) -> None:
    """With both lists given, every listed server carries a listed GPU and every listed GPU
    is carried by a listed server: otherwise a listed part can never be used, which is a
    contradiction in the scenario, not a design constraint."""
    c = scenario.constraints
    if not isinstance(c.gpus, list) or not c.servers:
        return
    carried = {s: cat.server(s).gpu for s in c.servers}
    for j, s in enumerate(c.servers):
        if carried[s] not in c.gpus:
            raise ScenarioError(
                f"{_where(doc, ('constraints', 'servers', j))}: server {s!r} carries "
                f"{carried[s]!r}, which is not in constraints.gpus "
                f"({', '.join(map(repr, c.gpus))}); add the GPU or drop the server"
            )
    for j, g in enumerate(c.gpus):
        if g not in carried.values():
            raise ScenarioError(
                f"{_where(doc, ('constraints', 'gpus', j))}: no server in "
                f"constraints.servers ({', '.join(map(repr, c.servers))}) carries {g!r}; "
                "add a server for it or drop the GPU"
            )


def _cluster_fits_servers(scenario: Scenario, cat: Catalog, doc: LoadedYaml | None) -> None:
    """A fixed ``cluster.gpus`` is whole servers of every server the scenario names (or, for a
    named GPU, of at least one server that carries it), with GPUs left beside the spares."""
    size = scenario.cluster.gpus
    if size is None:
        return
    c = scenario.constraints
    named: list[tuple[tuple[str | int, ...], list[Server]]] = []
    if c.servers:
        named = [(("constraints", "servers", j), [cat.server(s)]) for j, s in enumerate(c.servers)]
    elif isinstance(c.gpus, list):
        named = [(("constraints", "gpus", j), [s for s in cat.all("servers") if s.gpu == g])
                 for j, g in enumerate(c.gpus)]
    at = _where(doc, ("cluster", "gpus"))
    for loc, servers in named:
        fits = [s for s in servers if size % s.gpus == 0]
        if servers and not fits:
            sizes = ", ".join(f"{s.id!r} holds {s.gpus}" for s in servers)
            g = servers[0].gpus
            lo, hi = size // g * g, (size // g + 1) * g
            hint = f"{lo:,} or {hi:,}" if lo else f"{hi:,}"
            raise ScenarioError(
                f"{at}: {size:,} GPUs is not a whole number of servers for "
                f"{format_loc(loc)}{_line(doc, loc)} ({sizes} GPUs per server); try {hint}")
        spares = scenario.cluster.fixed_spares
        # A contradiction only if even the smallest fitting server leaves no GPU for work.
        s = min(fits, key=lambda s: s.gpus) if fits else None
        if s is not None and spares * s.gpus >= size:
            raise ScenarioError(
                f"{_where(doc, ('cluster', 'spares'))}: {spares:,} spare {s.id} servers "
                f"({spares * s.gpus:,} GPUs) fill {format_loc(('cluster', 'gpus'))}"
                f"{_line(doc, ('cluster', 'gpus'))} = {size:,} GPUs ({size // s.gpus:,} "
                f"servers, {format_loc(loc)}{_line(doc, loc)}) and leave none for work; lower "
                "the spares or raise the size")


def _line(doc: LoadedYaml | None, loc: tuple[str | int, ...]) -> str:
    line = doc.line_of(loc) if doc is not None else None
    return f" (line {line})" if line else ""


def provider_key(name: str) -> str:
    """A provider name as a scenario may write it: "Google Cloud" -> "google-cloud"."""
    return "-".join("".join(ch if ch.isalnum() else " " for ch in name.lower()).split())


def matching_offers(cat: Catalog, gpu: str, policy: CloudPolicy) -> list[CloudOffer]:
    """The catalog offers renting ``gpu`` that ``policy`` allows (its provider or offer, and
    a price for its term), in catalog order."""
    out = []
    for o in cat.all("clouds"):
        if o.gpu != gpu:
            continue
        if policy.offer is not None and o.id != policy.offer:
            continue
        if policy.provider is not None and provider_key(o.provider) != provider_key(
                policy.provider):
            continue
        if policy.term == "committed" and o.committed_usd_per_hour is None:
            continue
        if policy.term in ("1y", "3y") and o.committed_term != policy.term:
            continue
        out.append(o)
    return out


def _possible_gpus(scenario: Scenario, cat: Catalog) -> list[str]:
    """Every GPU the planner may consider: the listed ones, else those of the listed servers,
    else every GPU a catalog server carries."""
    c = scenario.constraints
    if isinstance(c.gpus, list):
        return list(c.gpus)
    servers = [cat.server(s) for s in c.servers] if c.servers else cat.all("servers")
    return list(dict.fromkeys(s.gpu for s in servers))


def _pricing_refs(scenario: Scenario, cat: Catalog, doc: LoadedYaml | None) -> None:
    """``prices.server_usd`` names catalog servers; ``cloud`` names a provider or offer of the
    catalog that rents at least one GPU the plan may choose, at its term."""
    for s in scenario.prices.server_usd:
        try:
            cat.server(s)
        except UnknownIdError as exc:
            raise ScenarioError(f"{_where(doc, ('prices', 'server_usd', s))}: {exc}") from None
    pol = scenario.cloud
    offers: list[CloudOffer] = cat.all("clouds")
    if pol.offer is not None:
        try:
            cat.cloud(pol.offer)
        except UnknownIdError as exc:
            raise ScenarioError(f"{_where(doc, ('cloud', 'offer'))}: {exc}") from None
    if pol.provider is not None:
        known = sorted({provider_key(o.provider) for o in offers})
        if provider_key(pol.provider) not in known:
            raise ScenarioError(
                f"{_where(doc, ('cloud', 'provider'))}: no catalog cloud offer is from "
                f"{pol.provider!r}; providers: {', '.join(known)}")
    gpus = _possible_gpus(scenario, cat)
    any_term = pol.model_copy(update={"term": "on_demand"})
    if not any(matching_offers(cat, g, any_term) for g in gpus):
        field = "offer" if pol.offer is not None else "provider"
        who = pol.offer if pol.offer is not None else pol.provider
        if who is not None:
            raise ScenarioError(
                f"{_where(doc, ('cloud', field))}: {who!r} rents none of the GPUs this plan "
                f"may choose ({', '.join(gpus)})")
        return  # no offer rents any candidate: the planner says so per GPU
    if not any(matching_offers(cat, g, pol) for g in gpus):
        rates = sorted({f"{o.id} ({o.commitment})" for g in gpus
                        for o in matching_offers(cat, g, any_term) if o.commitment})
        raise ScenarioError(
            f"{_where(doc, ('cloud', 'term'))}: no catalog offer for these GPUs has a "
            f"{pol.term} price with a cited source"
            + (f"; committed prices: {'; '.join(rates)} (term: committed)" if rates else
               "; use term: on_demand"))
