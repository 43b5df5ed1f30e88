"""Where NVIDIA AIConfigurator's per-operator tables live and how their versions sort, for
the scripts that fit catalog constants on them (``fit_moe_kernel_floor.py``,
``fit_moe_format_speedup.py``, ``fit_sparse_attention_floor.py``).

The tables ship in the ``aiconfigurator`` package (Apache-2.0) under
``aiconfigurator_core/systems/data/<system>/<operator>/<engine>/<version>/<table>.parquet``;
the peers' venv (benchmarks/run.sh) installs it with pandas and pyarrow."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

Row = TypeVar("Row")


def version_key(v: str) -> tuple[int | str, ...]:
    """A release string as a sortable key: 1.3.0rc20 after 1.3.0rc3, 0.5.14 after 0.5.9."""
    return tuple(int(p) if p.isdigit() else p for p in v.replace("rc", ".rc.").split("."))


def default_data() -> Path:
    """The installed package's ``systems/data`` folder."""
    import aiconfigurator_core  # type: ignore[import-not-found]

    return Path(aiconfigurator_core.__file__).parent / "systems" / "data"


def fullest_table(folder: Path, table: str, read: Callable[[Path], list[Row]]
                  ) -> tuple[list[Row], str] | None:
    """The rows ``read`` takes from the version of ``folder/<version>/<table>.parquet`` that
    gives the most (a later version may re-measure a few formats only: TensorRT-LLM
    1.3.0rc23 holds 2 of rc20's 6 MoE formats), the newest of equals, with that version;
    None when no version holds the table."""
    versions = [p.name for p in folder.glob("*") if (p / f"{table}.parquet").exists()]
    if not versions:
        return None
    tables = [(read(folder / v / f"{table}.parquet"), v) for v in versions]
    return max(tables, key=lambda t: (len(t[0]), version_key(t[1])))
