"""train plan --slice, --offload and train multisite: bad input exits 2 naming the flag."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from clusterwright.cli.main import app
from tests.cli.helpers import json_ok, user_error

runner = CliRunner()


@pytest.mark.parametrize("shape, why", [("16x16x32", "larger than the pod"),
                                        ("3x4x4", "not a slice shape"), ("8x8", "axes")])
def test_a_slice_the_pod_cannot_form_names_slice(shape: str, why: str) -> None:
    r = runner.invoke(app, ["train", "plan", "--model", "llama-3.1-8b", "--gpu", "tpu-v5p",
                            "--gpus", "64", "--slice", shape, "--json"])
    err = user_error(r)
    assert "--slice" in err and why in err


def test_offload_needs_a_superchip_and_room_in_its_cpu_memory() -> None:
    err = user_error(runner.invoke(app, ["train", "estimate", "--model", "llama-3.1-8b", "--gpu",
                                         "h100-sxm", "--gpus", "8", "--offload", "optimizer"]))
    assert "--offload" in err and "h100-sxm" in err
    err = user_error(runner.invoke(app, [
        "train", "estimate", "--model", "llama-3.1-405b", "--gpu", "gh200", "--gpus", "8",
        "--tp", "8", "--offload", "optimizer", "--global-batch", "8", "--recompute", "full"]))
    assert "--offload" in err and "480 GB of CPU memory" in err


def test_offload_moves_the_optimizer_to_cpu_memory() -> None:
    base = ["train", "estimate", "--model", "llama-3.1-8b", "--gpu", "gh200", "--gpus", "8",
            "--zero", "1", "--global-batch", "64", "--json"]
    on = json_ok(runner.invoke(app, [*base, "--offload", "optimizer"]))
    off = json_ok(runner.invoke(app, base))
    assert on["memory_gb"]["optimizer"] == 0 and on["memory_gb"]["host"] > 0
    assert on["memory_per_gpu_gb"] < off["memory_per_gpu_gb"]
    assert on["breakdown"]["optimizer_s"] > off["breakdown"]["optimizer_s"]


def test_multisite_without_wan_link_names_the_flag() -> None:
    err = user_error(runner.invoke(app, ["train", "multisite", "--model", "llama-3.1-8b",
                                         "--gpu", "h100-sxm", "--sites", "2", "--site-mw", "1"]))
    assert err.startswith("error: --wan-gbps") or "--wan-gbps" in err
