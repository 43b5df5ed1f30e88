"""`clusterwright netsim`: the JSON contract, the text report, and bad input (exit 2, the flag
named, no traceback)."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from tests.cli.helpers import json_ok, user_error

CONTRACT_KEYS = ("completion_time_s", "algbw_gbps", "busbw_gbps", "max_link_utilization",
                 "closed_form_time_s")
SMALL = ("--server", "dgx-h100", "--nodes", "2", "--collective", "allreduce")

runner = CliRunner()


def cw(*args: str) -> Result:
    return runner.invoke(app, ["netsim", *args], env={"CLUSTERWRIGHT_CATALOG": None})


def netsim_json(*args: str) -> dict[str, Any]:
    return json_ok(cw(*args, "--json"))


def test_json_is_one_object_with_the_contract_keys() -> None:
    d = netsim_json(*SMALL, "--size-bytes", "1e9", "--algorithm", "ring")
    assert tuple(d)[:len(CONTRACT_KEYS)] == CONTRACT_KEYS
    for key in CONTRACT_KEYS:
        assert isinstance(d[key], float) and d[key] > 0, key
    assert d["busbw_gbps"] == pytest.approx(d["algbw_gbps"] * 2 * 15 / 16)
    assert d["algorithm"] == "ring"
    assert d["routing"] == "ecmp"


def test_json_carries_every_option_through() -> None:
    d = netsim_json("--server", "dgx-h100", "--nodes", "16", "--su-hosts", "8",
                    "--switch", "sn5600", "--collective", "allgather", "--size-bytes", "2e8",
                    "--routing", "adaptive", "--qps", "2", "--seed", "3", "--polarized",
                    "--ranks", "32", "--jobs", "2", "--placement", "spread",
                    "--degrade", "spine-001=0.5", "--fail", "spine-002", "--fail-at", "1e-4")
    assert (d["collective"], d["routing"], d["qps"], d["seed"], d["polarized"]) == (
        "allgather", "adaptive", 2, 3, True)
    assert (d["ranks"], d["placement"], d["switch"], d["size_bytes"]) == (
        32, "spread", "sn5600", 2e8)
    assert d["failures"] == ["spine-002"]
    assert d["degraded"] == [{"name": "spine-001", "factor": 0.5}]
    assert len(d["jobs"]) == len(d["slowdown_vs_solo"]) == 2


def test_text_report_names_the_result_and_the_closed_form() -> None:
    r = cw(*SMALL, "--size-bytes", "1e9", "--jobs", "2", "--ranks", "8")
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "busbw" in out and "closed form" in out and "Most loaded links" in out
    assert "its time alone" in out  # one line per job


def test_all_to_all_without_pxn_runs() -> None:
    d = netsim_json("--server", "dgx-h100", "--nodes", "2", "--collective", "alltoall",
                    "--size-bytes", "1e8", "--no-pxn")
    assert d["collective"] == "alltoall"


@pytest.mark.parametrize(("args", "flag"), [
    (("--size-bytes", "0"), "--size-bytes"),
    (("--size-bytes", "1e9", "--routing", "foo"), "--routing"),
    (("--size-bytes", "1e9", "--collective", "foo"), "--collective"),
    (("--size-bytes", "1e9", "--algorithm", "foo"), "--algorithm"),
    (("--size-bytes", "1e9", "--algorithm", "nvls"), "--algorithm: nvls"),
    (("--size-bytes", "1e9", "--degrade", "x=2"), "--degrade"),
    (("--size-bytes", "1e9", "--degrade", "spine-001"), "--degrade"),
    (("--size-bytes", "1e9", "--fail", "nosuchswitch"),
     "--fail: no device or link named 'nosuchswitch'"),
    (("--size-bytes", "1e9", "--degrade", "nosuch=0.5"), "--degrade: no device or link named"),
    (("--size-bytes", "1e9", "--ranks", "100000"), "--ranks"),
    (("--size-bytes", "1e9", "--ranks", "1"), "--ranks"),
    (("--size-bytes", "1e9", "--jobs", "0"), "--jobs"),
    (("--size-bytes", "1e9", "--qps", "0"), "--qps"),
    (("--size-bytes", "1e9", "--placement", "foo"), "--placement"),
    (("--size-bytes", "1e9", "--fail-at", "-1"), "--fail-at"),
    (("--size-bytes", "1e9", "--tiers", "4"), "--tiers"),
    (("--size-bytes", "1e9", "--oversubscription", "0.5"), "--oversubscription"),
])
def test_bad_input_exits_2_naming_the_flag(args: tuple[str, ...], flag: str) -> None:
    assert flag in user_error(cw(*SMALL, *args))


def test_zero_nodes_exits_2() -> None:
    r = cw("--server", "dgx-h100", "--nodes", "0", "--collective", "allreduce",
           "--size-bytes", "1e9")
    assert "--nodes" in user_error(r)


def test_an_unknown_server_exits_2() -> None:
    r = cw("--server", "nosuch", "--nodes", "2", "--collective", "allreduce",
           "--size-bytes", "1e9")
    assert "nosuch" in user_error(r)


def test_an_infinite_size_exits_2() -> None:
    assert "--size-bytes" in user_error(cw(*SMALL, "--size-bytes", "inf"))


@pytest.mark.parametrize(("args", "message"), [
    (("--collective", "foo"), "--collective: unknown 'foo' (one of allreduce,"),
    (("--routing", "foo"), "--routing: unknown policy 'foo' (one of ecmp,"),
    (("--algorithm", "foo"), "--algorithm: unknown 'foo' (one of"),
    (("--algorithm", "nvls"), "--algorithm: nvls is an NVLink SHARP all-reduce inside one domain"),
    (("--collective", "allgather", "--algorithm", "tree"),
     "--algorithm: tree applies to allreduce only"),
    (("--ranks", "12", "--jobs", "2"),
     "--ranks: 12 ranks x 2 jobs = 24 GPUs, but the fabric has 16"),
    (("--placement", "foo", "--jobs", "2", "--ranks", "8"), "--placement: unknown 'foo' (one of"),
])
def test_simulator_errors_are_worded_with_the_flags(args: tuple[str, ...], message: str) -> None:
    """The simulator blames fields; the CLI words them with its flags, field names unseen."""
    err = user_error(cw(*SMALL, "--size-bytes", "1e9", *args))
    assert message in err
    assert "size_bytes" not in err and "degraded" not in err


# ---------------------------------------------------------------------- congestion control

INCAST = ("--server", "dgx-h100", "--nodes", "8", "--switch", "sn5600", "--size-bytes",
          "2e6")


def test_incast_alone_keeps_the_contract_keys_and_adds_the_fluid_run() -> None:
    d = netsim_json(*INCAST, "--incast", "6", "--cc", "dcqcn", "--pfc", "--mtu", "4096")
    for key in CONTRACT_KEYS:
        assert key in d
    assert d["collective"] == "incast" and d["incast"] == 6 and d["ranks"] == 7
    c = d["congestion_control"]
    assert (c["cc"], c["pfc"], c["mtu"], c["flows"]) == ("dcqcn", True, 4096, 6)
    assert c["completed"] and c["completion_time_s"] >= d["completion_time_s"] * 0.99
    assert c["max_queue_bytes"] > 0 and c["cnps"] > 0
    assert "fluid_wall_s" in d["timings"] and "wall_s" not in c


def test_the_text_report_has_the_congestion_control_lines() -> None:
    r = cw(*INCAST, "--incast", "4")
    assert r.exit_code == 0, r.output
    assert "dcqcn" in r.output and "max switch queue" in r.output


def test_a_collective_runs_under_congestion_control_too() -> None:
    d = netsim_json(*SMALL, "--size-bytes", "1e7", "--cc", "none")
    assert d["collective"] == "allreduce"
    assert d["congestion_control"]["completed"]


@pytest.mark.parametrize(("args", "flag"), [
    (("--incast", "8"), "--incast: 8 senders need 9 servers; the fabric has 8"),
    (("--incast", "0"), "--incast"),
    (("--incast", "2", "--cc", "cubic"), "--cc: unknown congestion control 'cubic'"),
    (("--incast", "2", "--mtu", "1499"), "--mtu"),
    (("--incast", "2", "--mtu", "9217"), "--mtu"),
    (("--incast", "2", "--pfc-storm", "nosuch"), "--pfc-storm"),
    ((), "--collective"),
])
def test_bad_congestion_control_input_exits_2_naming_the_flag(args: tuple[str, ...],
                                                              flag: str) -> None:
    assert flag in user_error(cw(*INCAST, *args))
