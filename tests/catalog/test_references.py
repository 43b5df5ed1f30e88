"""catalog/references.py: ids resolved, and a fixed ``cluster.gpus`` checked against the servers
the scenario names (whole servers, room beside the spares), naming both fields and lines."""

from __future__ import annotations

import pytest

from clusterwright.catalog.references import resolve
from clusterwright.catalog.registry import Catalog
from clusterwright.errors import ScenarioError
from clusterwright.spec.scenario import loads_scenario

TEXT = """\
name: "r"
workloads:
  - kind: "training"
    name: "a"
    model: "llama-3.1-8b"
    tokens: 1.0e11
    gpus: 64
constraints:
  gpus: ["h100-sxm"]
{servers}cluster:
{cluster}
"""


def check(cat: Catalog, cluster: str, servers: str = '  servers: ["dgx-h100"]\n') -> None:
    sc, doc = loads_scenario(TEXT.format(cluster=cluster, servers=servers))
    resolve(sc, cat, doc)


def test_size_not_whole_servers_names_the_server_and_both_lines(catalog: Catalog) -> None:
    with pytest.raises(ScenarioError) as e:
        check(catalog, "  gpus: 100")
    err = str(e.value)
    assert "cluster.gpus (line 12)" in err and "constraints.servers[0] (line 10)" in err, err
    assert "'dgx-h100' holds 8" in err and "96 or 104" in err


def test_size_checked_against_every_server_of_a_named_gpu(catalog: Catalog) -> None:
    carriers = [s for s in catalog.all("servers") if s.gpu == "h100-sxm"]
    assert carriers and all(s.gpus == 8 for s in carriers)  # premise of the sizes below
    with pytest.raises(ScenarioError) as e:
        check(catalog, "  gpus: 68", servers="")
    assert "constraints.gpus[0] (line 9)" in str(e.value) and "64 or 72" in str(e.value)
    check(catalog, "  gpus: 72", servers="")


def test_spares_filling_the_servers_name_both_fields(catalog: Catalog) -> None:
    # The workload fits the size on its own (spec passes); 8 eight-GPU spares fill it.
    with pytest.raises(ScenarioError) as e:
        check(catalog, "  gpus: 64\n  spares: 8")
    err = str(e.value)
    assert "cluster.spares (line 13)" in err and "cluster.gpus (line 12)" in err, err
    assert "8 spare dgx-h100 servers (64 GPUs)" in err


def test_a_size_of_whole_servers_with_room_passes(catalog: Catalog) -> None:
    check(catalog, "  gpus: 80\n  spares: 2")
