"""The layer rule of DESIGN.md: a module imports only from its own layer or the layers below.

spec -> catalog -> model -> design -> sim -> plan -> export/report -> cli/web (with lab,
validation and ingest at the faces' level, and the live twin just above them). Every import
is read from the source, including the ones inside functions, so a lazy import cannot hide an
upward dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "clusterwright"

# Lower number = lower layer. Modules directly under clusterwright/ (errors, jsonsafe,
# ownership) are the ground every layer stands on.
RANK = {
    "": 0, "spec": 1, "store": 2, "catalog": 2, "model": 3, "design": 4, "sim": 5, "plan": 6,
    "report": 7, "export": 8, "validation": 9, "lab": 9, "ingest": 9, "twin": 10, "web": 11,
    "cli": 12, "__main__": 13,
}
# Leaf modules every layer may import although they live higher up: report/fmt is the one
# money and percent formatter, and design/ and plan/ write why lines and violation messages
# that must read the same as the report ("$41.0M", "12.8 %"). A leaf imports nothing from
# the package (checked below), so it cannot carry an upward dependency.
LEAVES = {"clusterwright.report.fmt"}
# blueprint export renders the report, so report sits just below export. The CLI starts the
# web server (``clusterwright web``), so the web sits below the CLI; the faces import lab,
# validation and ingest, never the other way round. The live twin (twin/) compares what ingest
# parses, runs the lab, and calls design, sim and plan for its impact estimate, so it sits
# above ingest and lab and below the faces (the CLI and the web import it).


def _package(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "clusterwright":
        return "<outside>"
    if len(parts) == 1:
        return ""
    sub = parts[1]
    return sub if (SRC / sub).is_dir() or sub == "__main__" else ""


def _imports(path: Path, pkg: str | None = None) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if pkg is None:
        pkg = ".".join(("clusterwright", *path.relative_to(SRC).with_suffix("").parts[:-1]))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                                + ([base] if base else []))
            out.append((node.lineno, base))
            # ``from clusterwright import sim`` names a package, not a name of the face.
            if base == "clusterwright":
                out += [(node.lineno, f"clusterwright.{a.name}") for a in node.names]
    return out


def upward_imports() -> list[str]:
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        own = rel.parts[0] if len(rel.parts) > 1 else ("__main__" if rel.stem == "__main__"
                                                       else "")
        for line, module in _imports(path):
            if module in LEAVES:
                continue
            pkg = _package(module)
            if pkg == "<outside>" or pkg == own:
                continue
            if RANK[pkg] > RANK[own] or (RANK[pkg] == RANK[own] and pkg != own):
                bad.append(f"{rel}:{line} ({own or 'clusterwright'}) imports {module} ({pkg})")
    return bad


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages <= set(RANK), f"no layer for {sorted(packages - set(RANK))}: add it to RANK"


def test_no_module_imports_a_higher_layer() -> None:
    bad = upward_imports()
    assert not bad, "imports against the layer rule:\n" + "\n".join(bad)


@pytest.mark.parametrize("leaf", sorted(LEAVES))
def test_a_leaf_imports_nothing_from_the_package(leaf: str) -> None:
    path = SRC.joinpath(*leaf.split(".")[1:]).with_suffix(".py")
    inside = [m for _, m in _imports(path) if _package(m) != "<outside>"]
    assert not inside, f"{leaf} must stay a leaf, but imports {inside}"


@pytest.mark.parametrize("src, own, expected", [
    ("from clusterwright.cli.common import console\n", "design", True),
    ("def f():\n    from clusterwright.plan.scenario import plan_scenario\n", "sim", True),
    ("from clusterwright.model import flops\n", "plan", False),
])
def test_the_check_sees_lazy_and_module_imports(tmp_path: Path, src: str, own: str,
                                                expected: bool) -> None:
    # The rule must catch an import hidden inside a function as well as a module-level one.
    probe = tmp_path / "probe.py"
    probe.write_text(src, encoding="utf-8")
    mods = [m for _, m in _imports(probe, f"clusterwright.{own}")]
    found = any(RANK[_package(m)] > RANK[own] for m in mods if _package(m) != "<outside>")
    assert found is expected

