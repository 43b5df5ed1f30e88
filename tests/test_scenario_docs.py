"""scripts/gen_scenario_docs.py: docs/scenario.md is what the models say (regenerate it with
the script after changing a field), and it names every section and field."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from clusterwright.spec import reference
from tests import scripts

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    return scripts.load("gen_scenario_docs")


def test_docs_scenario_md_is_not_stale(gen: ModuleType) -> None:
    shipped = (ROOT / "docs" / "scenario.md").read_text(encoding="utf-8")
    assert shipped == gen.render(), (
        "docs/scenario.md is stale: run `.venv/bin/python scripts/gen_scenario_docs.py`")
    assert gen.main(["--check"]) == 0


def test_every_field_is_a_row_of_its_section(gen: ModuleType) -> None:
    text = gen.render()
    for s in reference.sections():
        head = f"## {s.name}\n"
        assert head in text, s.name
        body = text.split(head, 1)[1].split("\n## ", 1)[0]
        for f in s.fields:
            assert f"| `{f.name}` |" in body, f"{s.name}.{f.name}"


def test_check_fails_on_a_stale_file(gen: ModuleType, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "scenario.md"
    stale.write_text("# old\n", encoding="utf-8")
    monkeypatch.setattr(gen, "DOC", stale)
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0 and stale.read_text(encoding="utf-8") == gen.render()
