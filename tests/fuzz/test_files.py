"""Hostile files given to every command that reads one: YAML bombs, deep nesting, a sparse
2 GiB file, binary and mis-encoded text, tags that would run code, special files.

Each runs in a subprocess under a 1 GiB address-space limit and a 20 s wall-clock limit and
must end in exit 2 with a message (the empty file and the comment-only file too: they are not
a scenario). The handwritten corpus is ``tests/fuzz/corpus/``; the large files are built here.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.fuzz.harness import Outcome, invoke, problems, run

CORPUS = Path(__file__).parent / "corpus"


def _mb_bomb(dest: Path) -> None:
    """About 1 MB of nested aliases: 1e60 leaves if expanded."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 60)]
    body = "\n".join(lines) + "\n"
    dest.write_text(body + "# " + "x" * (1_000_000 - len(body)) + "\n", encoding="utf-8")


def _deep_flow(dest: Path) -> None:
    dest.write_text("a: " + "{b: " * 5000 + "1" + "}" * 5000 + "\n", encoding="utf-8")


def _deep_list(dest: Path) -> None:
    dest.write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")


def _deep_block(dest: Path) -> None:
    dest.write_text("".join(" " * i + f"k{i}:\n" for i in range(3000)) + " " * 3000 + "v\n",
                    encoding="utf-8")


def _sparse_2gib(dest: Path) -> None:
    with dest.open("wb") as f:
        f.truncate(2 << 30)


def _binary(dest: Path) -> None:
    dest.write_bytes(random.Random(19).randbytes(200_000))


def _long_line(dest: Path) -> None:
    dest.write_text("version: 1\nname: " + "x" * 20_000_000 + "\n", encoding="utf-8")


def _many_keys(dest: Path) -> None:
    dest.write_text("".join(f"k{i}: {i}\n" for i in range(200_000)), encoding="utf-8")


GENERATED: dict[str, Callable[[Path], None]] = {
    "mb-bomb.yaml": _mb_bomb, "deep-flow.yaml": _deep_flow, "deep-list.yaml": _deep_list,
    "deep-block.yaml": _deep_block, "sparse-2gib.yaml": _sparse_2gib,
    "binary.yaml": _binary, "long-line.yaml": _long_line, "many-keys.yaml": _many_keys,
}
# Files whose reading could take memory or time if a limit broke: always in a subprocess.
HEAVY = {"billion-laughs.yaml", "self-alias.yaml", "recursive-anchor.yaml", *GENERATED}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("hostile")
    files = {p.name: p for p in sorted(CORPUS.iterdir())}
    for name, make in GENERATED.items():
        make(d / name)
        files[name] = d / name
    os.mkfifo(d / "fifo.yaml")
    files["fifo.yaml"] = d / "fifo.yaml"
    files["directory.yaml"] = d
    files["dev-zero"] = Path("/dev/zero")
    files["dev-urandom"] = Path("/dev/urandom")
    return files


def test_the_corpus_is_there() -> None:
    assert len(list(CORPUS.iterdir())) >= 15
    assert (CORPUS / "billion-laughs.yaml").stat().st_size < 400


# Each reader of a file: the arguments, with {f} for the hostile file and {tmp} for scratch.
READERS: dict[str, list[str]] = {
    "check": ["check", "{f}"],
    "plan": ["plan", "{f}", "--out", "{tmp}/bp"],
    "sweep": ["sweep", "{f}", "--out", "{tmp}/sw"],
    "runs save-scenario": ["runs", "save-scenario", "{f}", "--db", "{tmp}/cw.db"],
    "--catalog": ["--catalog", "{f}", "catalog", "list", "gpus"],
    "size --model": ["size", "--model", "{f}"],
    "ops schedule": ["ops", "schedule", "{f}"],
    "validate --data": ["validate", "--table", "serving-silicon", "--data", "{f}"],
}
# The full corpus goes through ``check`` (the scenario reader); every other reader gets the
# files that test a limit of its own reading path.
LIMIT_FILES = ["billion-laughs.yaml", "mb-bomb.yaml", "deep-flow.yaml", "sparse-2gib.yaml",
               "binary.yaml", "fifo.yaml", "dev-zero", "directory.yaml"]


def _case(reader: str, name: str, path: Path, tmp: Path) -> tuple[str, Outcome]:
    args = [a.replace("{f}", str(path)).replace("{tmp}", str(tmp))
            for a in READERS[reader]]
    heavy = name in HEAVY or name.startswith(("fifo", "dev-"))
    return name, run(args) if heavy else invoke(args)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_hostile_files_are_refused(reader: str, hostile: dict[str, Path],
                                   tmp_path: Path) -> None:
    names = sorted(hostile) if reader == "check" else LIMIT_FILES
    heavy = [n for n in names if n in HEAVY or n.startswith(("fifo", "dev-"))]
    light = [n for n in names if n not in heavy]
    outcomes = [_case(reader, n, hostile[n], tmp_path) for n in light]
    # Two subprocesses at a time: the CI machine has two cores.
    with ThreadPoolExecutor(2) as pool:
        outcomes += list(pool.map(lambda n: _case(reader, n, hostile[n], tmp_path), heavy))
    found = [f"{name}: {p}\n  {o.describe()}" for name, o in outcomes
             for p in problems(o, must_refuse=True)]
    assert not found, "\n\n".join(found)
    assert not Path("/tmp/cw-pwned").exists()
