"""``clusterwright ops vector``: the spread of published formulas, servers, embedding time,
and bad flags refused with exit 2 naming the flag."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from clusterwright.cli.main import app

runner = CliRunner()


def cw(*args: str) -> tuple[int, str]:
    r = runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None})
    return r.exit_code, r.output


def test_json_has_every_source_the_spread_servers_and_embedding() -> None:
    code, out = cw("ops", "vector", "--vectors", "1e9", "--dim", "768", "--replicas", "2",
                   "--node-memory-gb", "1024", "--corpus-tokens", "5e11", "--embed-params",
                   "335e6", "--gpus", "64", "--json")
    assert code == 0, out
    d = json.loads(out)
    assert [e["source"].split()[0] for e in d["estimates"]] == ["FAISS", "ScyllaDB", "Qdrant"]
    # 1e9 x (768 x 4 + 128) B = 3,200 GB (FAISS) to 1e9 x 3,072 x 1.5 = 4,608 GB (Qdrant)
    assert (d["memory_gb"]["low"], d["memory_gb"]["high"]) == pytest.approx((3200, 4608))
    # two replicas on 1,024 GB servers: 6,400 / 1,024 -> 7 and 9,216 / 1,024 = 9 servers
    assert (d["servers"]["low"], d["servers"]["high"]) == (7, 9)
    assert d["embedding"]["flops"] == pytest.approx(2 * 335e6 * 5e11)
    assert 0 < d["embedding"]["efficiency"] <= 1 and d["embedding"]["hours"] > 0


@pytest.mark.parametrize(("args", "flag"), [
    (["--dim", "40000"], "--dim"),
    (["--dim", "768", "--index", "diskann", "--degree", "600"], "--degree"),
    (["--dim", "768", "--index", "ivf-pq", "--pq-m", "7"], "--pq-m"),
    (["--dim", "768", "--index", "annoy"], "--index"),
    (["--dim", "768", "--precision", "fp4"], "--precision"),
    (["--dim", "768", "--m", "1"], "--m"),
    (["--dim", "768", "--corpus-tokens", "1e9"], "--embed-params"),
    # Another index's option was ignored without a word (HNSW's M on DiskANN, and so on)
    (["--dim", "768", "--index", "diskann", "--m", "64"], "--m: applies to the hnsw index"),
    (["--dim", "768", "--index", "hnsw", "--nlist", "1000"], "--nlist: applies to the ivf-pq"),
    (["--dim", "768", "--index", "ivf-pq", "--degree", "32"], "--degree: applies to the "
                                                               "diskann"),
    (["--dim", "768", "--nbits", "4"], "--nbits: applies to the ivf-pq"),
])
def test_bad_flags_exit_2_naming_the_flag(args: list[str], flag: str) -> None:
    code, out = cw("ops", "vector", "--vectors", "1e6", *args)
    assert code == 2, out
    assert flag in out
