"""``twin lab``: faults injected into the lab fabric, found on real lldpd and FRR state.

Needs root, FRR and lldpd; skipped otherwise (CI installs both and runs as root).
"""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.lab import LabError, frr, lldpd, netns
from clusterwright.lab.fabric_lab import build_lab
from clusterwright.lab.names import parse_namespace
from clusterwright.twin import lab as twin_lab
from clusterwright.twin.lab import TwinLabRequest, as_built, run_twin_lab


def _unavailable() -> str | None:
    try:
        twin_lab.preflight()
    except LabError as exc:
        return str(exc)
    return None


_REASON = _unavailable()


def _ours() -> tuple[list[str], list[str]]:
    """Our namespaces, and live processes whose command line names one of our work dirs."""
    prefix = f"cw{os.getpid()}"
    spaces = [ns for ns in netns.list_namespaces()
              if (p := parse_namespace(ns)) is not None and p.pid == os.getpid()]
    procs = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"clusterwright-lab-{prefix}" in args or f"-N {prefix}" in args:
            procs.append(args)
    return spaces, procs


def _assert_cleaned_up() -> None:
    assert _ours() == ([], [])
    prefix = f"cw{os.getpid()}"
    assert not list(frr.FRR_RUN_DIR.glob(f"{prefix}*"))
    assert not list(Path(tempfile.gettempdir()).glob(f"clusterwright-lab-{prefix}*"))


def test_faults_are_planned_on_distinct_cables(catalog: Catalog) -> None:
    fab, spec = build_lab(catalog, 4, 2)
    built, faults = as_built(fab, spec, TwinLabRequest(miswires=2, down=2, seed=3))
    assert [f["kind"] for f in faults].count("miswired_link") == 4
    assert [f["kind"] for f in faults].count("missing_link") == 2
    assert sum(1 for lk in built.links if not lk.up) == 2
    assert len({f["cable"] for f in faults}) == 6
    assert built.sessions_expected == 8 - 4 - 2
    # hosts carry their interface under the planned port name
    assert {h.interface for h in built.hosts} == {"osfp4p2"}


def test_too_many_faults_is_an_input_error(catalog: Catalog) -> None:
    fab, spec = build_lab(catalog, 2, 1)
    with pytest.raises(Exception, match="miswires"):
        as_built(fab, spec, TwinLabRequest(leaves=2, spines=1, miswires=1, down=1))


@pytest.mark.netlab
@pytest.mark.parametrize("leaves, spines, miswires, down, seed", [(4, 2, 1, 1, 0),
                                                                   (6, 3, 2, 2, 7)])
def test_exactly_the_injected_faults_are_found(catalog: Catalog, leaves: int, spines: int,
                                               miswires: int, down: int, seed: int) -> None:
    if _REASON:
        pytest.skip(_REASON)
    d = run_twin_lab(TwinLabRequest(leaves=leaves, spines=spines, miswires=miswires,
                                    down=down, seed=seed), catalog)
    assert d["converged"], d["lab"]
    assert d["missed"] == [] and d["false_findings"] == []
    assert len(d["found"]) == len(d["injected"]) == 2 * miswires + down
    assert d["ok"] is True
    kinds = sorted(f["kind"] for f in d["findings"])
    assert kinds == sorted(["miswired_link"] * 2 * miswires + ["missing_link"] * down)
    # each miswired cable says which port it is on and which port it belongs in
    mis = [f for f in d["findings"] if f["kind"] == "miswired_link"]
    assert all(f["moves"][0]["from"] and f["moves"][0]["to"] for f in mis)
    assert d["lab"]["daemons"]["lldpd"] == 2 * leaves + spines
    _assert_cleaned_up()


@pytest.mark.netlab
@pytest.mark.parametrize("exc_type", [RuntimeError, KeyboardInterrupt])
def test_exception_mid_run_still_tears_down(catalog: Catalog, monkeypatch: pytest.MonkeyPatch,
                                            exc_type: type[BaseException]) -> None:
    if _REASON:
        pytest.skip(_REASON)
    seen: list[tuple[list[str], list[str]]] = []

    def failing(workdir: Path, namespace: str) -> str:
        seen.append(_ours())  # the namespaces and daemons are up by now
        raise exc_type("injected")

    monkeypatch.setattr(lldpd, "neighbors_json", failing)
    with pytest.raises(exc_type, match="injected"):
        run_twin_lab(TwinLabRequest(leaves=2, spines=2, miswires=1, down=0), catalog)
    spaces, procs = seen[0]
    # Something to tear down was running: the lab's namespaces and daemons started from its
    # work dir (lldpd rewrites its own command line once it runs, so which daemons still
    # show the work dir depends on timing; FRR's keep it).
    assert spaces and procs
    _assert_cleaned_up()


@pytest.mark.netlab
def test_sigterm_mid_run_tears_down_and_exits(catalog: Catalog,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    if _REASON:
        pytest.skip(_REASON)
    real = lldpd.neighbors_json

    def terminated(workdir: Path, namespace: str) -> str:
        os.kill(os.getpid(), signal.SIGTERM)
        return real(workdir, namespace)

    monkeypatch.setattr(lldpd, "neighbors_json", terminated)
    with pytest.raises(SystemExit) as info:
        run_twin_lab(TwinLabRequest(leaves=2, spines=2, miswires=1, down=0), catalog)
    assert info.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    _assert_cleaned_up()
