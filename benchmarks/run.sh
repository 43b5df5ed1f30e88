#!/usr/bin/env bash
# Run the benchmarks: planner speed, the side-by-side with llm-analysis, fabric designer speed.
#
# llm-analysis is a benchmark-only peer: it goes into benchmarks/.venv-peers (created here if
# missing, git-ignored), never into the project's dependencies or CI. Everything runs with
# HF_HUB_OFFLINE=1 so nothing reaches a model hub.
#
#   bash benchmarks/run.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="$here/.venv-peers"

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q "llm-analysis==0.2.2" -e "$repo"

export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
cd "$repo"
"$venv/bin/python" benchmarks/train_speed.py
"$venv/bin/python" benchmarks/peer_llm_analysis.py
"$venv/bin/python" benchmarks/fabric_speed.py
"$venv/bin/python" benchmarks/netsim_speed.py
"$venv/bin/python" benchmarks/serving_speed.py
"$venv/bin/python" benchmarks/serving_engine_speed.py
"$venv/bin/python" benchmarks/cluster_speed.py
"$venv/bin/python" benchmarks/plan_speed.py
"$venv/bin/python" benchmarks/whatif_speed.py
"$venv/bin/python" benchmarks/twin_speed.py
# The web workbench under load: `clusterwright web` in a subprocess, requests from this one.
"$venv/bin/python" benchmarks/web_load.py
# YAML bombs posted to the web: CPU and peak memory against the 1 s / 100 MB targets.
"$venv/bin/python" benchmarks/yaml_bomb.py
# Vidur (github.com/microsoft/vidur, benchmark-only): its dependencies go into the same venv;
# peer_vidur.py unpacks its source into benchmarks/.venv-peers/vidur from a local git snapshot
# ($VIDUR_GIT) and reports the error instead of Vidur's numbers when it cannot run.
"$venv/bin/python" -m pip install -q pandas scikit-learn scipy fasteners ddsketch wandb plotly_express && WANDB_MODE=disabled "$venv/bin/python" benchmarks/peer_vidur.py
# AIConfigurator (PyPI aiconfigurator 0.12.0, benchmark-only) on the measured serving rows of
# serving_silicon.csv, next to Clusterwright's predictions. Its kernel database and model
# configs ship in the package; AIC_ALLOW_UNLISTED_VERSIONS=1 lets it query the file's backend
# versions. About 15 minutes for the default ~1,000-row sample (--rows 0: all 3,130 rows).
"$venv/bin/python" -m pip install -q "aiconfigurator==0.12.0"
AIC_ALLOW_UNLISTED_VERSIONS=1 HF_HUB_OFFLINE=1 "$venv/bin/python" benchmarks/peer_aiconfigurator.py
