"""scripts/import_inferencemax_layouts.py: InferenceMAX's configuration read through its schema
change (``scenarios: fixed-seq-len``, 2026-05-01) and its move to ``configs/`` (2026-07-02),
so that runs measured after either still find their deployments."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from tests.scripts import load

imp = load("import_inferencemax_layouts")


def _bench(lengths_key: str) -> dict[str, object]:
    space = [{"spec-decoding": "none", "conc-list": [4, 8],
              "prefill": {"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": True},
              "decode": {"num-worker": 3, "tp": 8, "ep": 8, "dp-attn": False}}]
    sweep = [{"isl": 1024, "osl": 1024, "search-space": space}]
    b: dict[str, object] = {"model-prefix": "dsr1", "runner": "gb200", "precision": "fp4",
                            "framework": "dynamo-trt", "disagg": True}
    if lengths_key == "seq-len-configs":
        b["seq-len-configs"] = sweep
    else:
        b["scenarios"] = {"fixed-seq-len": sweep,
                          "agentic-coding": [{"duration": 1800, "search-space": space}]}
    return {"dsr1-fp4-gb200-dynamo-trt": b}


def test_both_schemas_give_the_same_entries() -> None:
    old = imp.entries(_bench("seq-len-configs"))
    new = imp.entries(_bench("scenarios"))
    assert old == new and len(old) == 1
    assert old[0][5:8] == ("1024", "1024", "4 8")  # lengths and client counts
    assert imp.entries({"x": {"disagg": True, "scenarios": "fixed"}}) == []


def _commit(repo: Path, files: dict[str, object | None], day: str) -> None:
    for path, doc in files.items():
        p = repo / path
        if doc is None:
            p.unlink()
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(yaml.safe_dump(doc), encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_DATE": f"{day}T12:00:00Z",
           "GIT_COMMITTER_DATE": f"{day}T12:00:00Z"}
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-q", "-m", day], check=True, env=env)


def test_an_entry_stays_open_across_the_schema_change_and_the_move(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    old, new = ".github/configs/nvidia-master.yaml", "configs/nvidia-master.yaml"
    _commit(repo, {old: _bench("seq-len-configs")}, "2026-04-01")
    _commit(repo, {old: _bench("scenarios")}, "2026-05-01")
    _commit(repo, {old: None, new: _bench("scenarios")}, "2026-07-02")
    changed = _bench("scenarios")
    changed["dsr1-fp4-gb200-dynamo-trt"]["scenarios"]["fixed-seq-len"][0][  # type: ignore[index]
        "search-space"][0]["conc-list"] = [16]
    _commit(repo, {"configs/deprecated/nvidia-dsr1-master.yaml": changed,
                   new: {}}, "2026-08-01")
    rows = imp.history(repo, imp.CONFIG, lambda text, _c: imp.entries(yaml.safe_load(text)),
                       imp.CONFIG_FILE)
    spans = sorted((r[1], r[3], r[4], r[11]) for r in rows)
    assert spans == [(old, "2026-04-01", "2026-08-01", "4 8"),
                     ("configs/deprecated/nvidia-dsr1-master.yaml", "2026-08-01", "", "16")]
