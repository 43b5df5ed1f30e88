"""`clusterwright ops reliability` and `ops checkpoint`: the JSON contract, numbers checked by
hand, the Monte Carlo path and bad input (exit 2 naming the flag)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from tests.cli.helpers import json_ok, user_error

runner = CliRunner()


def cw(*args: str) -> Result:
    return runner.invoke(app, ["ops", *args], env={"CLUSTERWRIGHT_CATALOG": None})


def test_reliability_contract_keys_and_llama3_scale() -> None:
    d = json_ok(cw("reliability", "--gpus", "16384", "--days", "54", "--json"))
    assert {"expected_interruptions", "job_mtbf_hours", "by_cause"} <= set(d)
    # GPU- and host-scaled causes are Table 5's counts at 16,384 GPUs / 2,048 hosts.
    assert d["by_cause"]["faulty-gpu"] == pytest.approx(148, rel=1e-5)
    assert d["by_category"]["gpu"] == pytest.approx(268, rel=1e-5)
    assert d["hosts"] == 2048 and d["server"] == "dgx-h100"
    # Network scales with the estimated rail-optimized fabric (3 tiers: 49,152 links) rather
    # than Meta's 35,109: 35 x 49,152 / 35,108.6 = 49.0.
    assert d["links"] == 49152
    assert d["by_cause"]["network-switch-cable"] == pytest.approx(49.0, rel=1e-4)
    assert d["expected_interruptions"] == pytest.approx(433.0, rel=1e-4)
    assert d["job_mtbf_hours"] == pytest.approx(54 * 24 / 433.0, rel=1e-4)
    assert d["planned_interruptions"] == pytest.approx(47, rel=1e-5)


def test_reliability_with_meta_fabric_links_gives_back_419() -> None:
    d = json_ok(cw("reliability", "--gpus", "16384", "--days", "54", "--links",
                   str(16384 * 15 / 7), "--json"))
    assert d["expected_interruptions"] == pytest.approx(419, rel=1e-5)
    assert d["job_mtbf_hours"] == pytest.approx(3.09, abs=0.005)


def test_reliability_server_sets_gpus_per_host() -> None:
    # GB200 NVL72: 72 GPUs on 18 compute trays, 4 GPUs per host -> 1,024 GPUs = 256 hosts.
    d = json_ok(cw("reliability", "--gpus", "1024", "--days", "30", "--server", "gb200-nvl72",
                   "--json"))
    assert d["gpus_per_host"] == 4 and d["hosts"] == 256 and d["gpu"] == "gb200"


def test_reliability_renders_a_table() -> None:
    r = cw("reliability", "--gpus", "1024", "--days", "30")
    assert r.exit_code == 0, r.output
    assert "faulty-gpu" in r.stdout and "job MTBF" in r.stdout


def test_monte_carlo_reports_a_distribution_close_to_the_analytical_ettr() -> None:
    d = json_ok(cw("reliability", "--gpus", "16384", "--days", "30", "--monte-carlo",
                   "--checkpoint-write-s", "60", "--restart-s", "600", "--trials", "400",
                   "--seed", "3", "--json"))
    mc = d["monte_carlo"]
    ttt = mc["time_to_train_days"]
    assert ttt["p10"] < ttt["p50"] < ttt["p90"]
    assert mc["ettr"]["mean"] == pytest.approx(mc["analytical_ettr"], abs=0.005)
    assert mc["trials"] == 400
    again = json_ok(cw("reliability", "--gpus", "16384", "--days", "30", "--monte-carlo",
                       "--checkpoint-write-s", "60", "--restart-s", "600", "--trials", "400",
                       "--seed", "3", "--json"))
    assert again["monte_carlo"] == mc  # seeded: reproducible


def test_monte_carlo_renders() -> None:
    r = cw("reliability", "--gpus", "2048", "--days", "10", "--monte-carlo", "--model",
           "llama-3.1-70b", "--trials", "50", "--hot-spares", "4")
    assert r.exit_code == 0, r.output
    assert "time to train" in r.stdout


def test_checkpoint_contract_and_note_test_vector() -> None:
    d = json_ok(cw("checkpoint", "--checkpoint-write-s", "60", "--mtbf-hours", "3.09",
                   "--restart-s", "600", "--json"))
    assert {"young_interval_s", "daly_interval_s", "ettr"} <= set(d)
    # sqrt(2 x 60 x 11,124) = 1,155.4 s = 19.3 min; first-order ETTR 0.842 (operations.md).
    assert d["young_interval_s"] == pytest.approx(1155.37, abs=0.01)
    assert d["ettr_first_order"] == pytest.approx(0.842, abs=5e-4)
    # Daly: 1155.37 x (1 + 1/3 sqrt(60/22248) + 1/9 (60/22248)) - 60 = 1115.7 s.
    assert d["daly_interval_s"] == pytest.approx(1115.72, abs=0.01)
    assert 0.84 < d["ettr"] < 0.86


def test_checkpoint_from_model_and_gpus() -> None:
    # 405.85B x 14 B = 5.682 TB over 16,384 writers capped at 2 TB/s -> 2.84 s.
    d = json_ok(cw("checkpoint", "--model", "llama-3.1-405b", "--gpus", "16384",
                   "--storage-gbps", "2000", "--json"))
    assert d["checkpoint_bytes"] == pytest.approx(405853388800 * 14)
    assert d["checkpoint_write_s"] == pytest.approx(2.841, abs=1e-3)
    assert d["mtbf_hours"] == pytest.approx(2.993, abs=1e-3)
    # 600 s with its 150 s NCCL-init part scaled to log2(16,384) / 12 = 14/12, plus the read.
    assert d["restart_s"] == pytest.approx(450 + 150 * 14 / 12 + 2.841, abs=1e-3)
    assert d["ettr"] > 0.9
    # Only one replica of 128 ranks writing: 5.682 TB / 64 GB/s = 88.8 s.
    one = json_ok(cw("checkpoint", "--model", "llama-3.1-405b", "--gpus", "16384",
                     "--writers", "128", "--storage-gbps", "2000", "--json"))
    assert one["checkpoint_write_s"] == pytest.approx(88.78, abs=0.01)
    assert one["ettr"] < d["ettr"]


def test_checkpoint_hot_spares_and_interval() -> None:
    d = json_ok(cw("checkpoint", "--checkpoint-write-s", "10", "--gpus", "16384",
                   "--hot-spares", "40", "--interval-s", "600", "--json"))
    assert 0.99 < d["spare_coverage_probability"] <= 1.0
    assert d["ettr_at_interval"] < d["ettr"] + 1e-12  # Daly's interval is (near) optimal
    none = json_ok(cw("checkpoint", "--checkpoint-write-s", "10", "--gpus", "16384",
                      "--hot-spares", "0", "--json"))
    assert none["spare_coverage_probability"] < 1e-6
    assert none["ettr"] < d["ettr"]


def test_checkpoint_renders() -> None:
    r = cw("checkpoint", "--checkpoint-write-s", "60", "--mtbf-hours", "3")
    assert r.exit_code == 0, r.output
    assert "Daly" in r.stdout


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("reliability", "--gpus", "0", "--days", "5"), "--gpus"),
        (("reliability", "--gpus", "8", "--days", "-1"), "--days"),
        (("reliability", "--gpus", "8", "--days", "1", "--links", "-3"), "--links"),
        (("reliability", "--gpus", "8", "--days", "1", "--gpu", "h200"), "--gpu"),
        (("reliability", "--gpus", "8", "--days", "1", "--server", "dgx-h100", "--gpu", "b200"),
         "--gpu"),
        (("reliability", "--gpus", "8", "--days", "1", "--server", "nope"), "--server"),
        (("reliability", "--gpus", "8", "--days", "1", "--monte-carlo"), "--checkpoint-write-s"),
        (("reliability", "--gpus", "8", "--days", "1", "--monte-carlo", "--model", "nope"),
         "--model"),
        (("reliability", "--gpus", "8", "--days", "1", "--trials", "0"), "--trials"),
        (("checkpoint", "--checkpoint-write-s", "-5", "--mtbf-hours", "3"),
         "--checkpoint-write-s"),
        (("checkpoint", "--checkpoint-write-s", "5", "--mtbf-hours", "0"), "--mtbf-hours"),
        (("checkpoint", "--checkpoint-write-s", "5", "--mtbf-hours", "3", "--restart-s", "-1"),
         "--restart-s"),
        (("checkpoint", "--mtbf-hours", "3"), "--checkpoint-write-s"),
        (("checkpoint", "--checkpoint-write-s", "5"), "--mtbf-hours"),
        (("checkpoint", "--checkpoint-write-s", "5", "--mtbf-hours", "3", "--hot-spares", "2"),
         "--hot-spares"),
        (("checkpoint", "--checkpoint-write-s", "5", "--gpus", "8", "--hot-spares", "-2"),
         "--hot-spares"),
        (("checkpoint", "--model", "llama-3-8b", "--gpus", "8", "--writers", "16",
          "--mtbf-hours", "3"), "--writers"),
        (("checkpoint", "--checkpoint-write-s", "5", "--mtbf-hours", "3", "--optimizer", "x"),
         "--optimizer"),
    ],
)
def test_bad_input_exits_2_naming_the_flag(args: tuple[str, ...], flag: str) -> None:
    err = user_error(cw(*args))
    assert flag in err
