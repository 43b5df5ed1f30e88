"""spec/reference.py: the scenario format read back from its models, for the generated
reference (docs/scenario.md) and the web editor's completion."""

from __future__ import annotations

from clusterwright.spec import reference
from clusterwright.spec.scenario import Scenario


def _section(name: str) -> reference.SectionDoc:
    return next(s for s in reference.sections() if s.name == name)


def test_every_section_and_field_of_the_models_is_listed() -> None:
    secs = {s.name: s for s in reference.sections()}
    assert secs["Scenario"].paths == ("(top level)",)
    assert [f.name for f in secs["Scenario"].fields] == list(Scenario.model_fields)
    for name in ("TrainingWorkload", "InferenceWorkload", "FinetuneWorkload", "Constraints",
                 "Cluster", "TrainingLayout", "LengthDist", "Slo", "Diurnal", "Window"):
        assert name in secs, name
    assert secs["LengthDist"].paths == ("workloads[] (kind: inference).input_len",
                                        "workloads[] (kind: inference).output_len")


def test_every_field_has_a_description() -> None:
    assert reference.undocumented() == []


def test_types_defaults_and_bounds_are_read_from_the_models() -> None:
    f = {x.name: x for x in _section("Cluster").fields}
    assert (f["gpus"].type, f["gpus"].default, f["gpus"].bounds) == (
        "integer", "unset", "> 0, <= 131,072")
    assert (f["spares"].default, f["spares"].bounds) == ("unset", ">= 0, <= 10,000")
    assert f["headroom"].bounds == ">= 0, <= 1" and "N+1" in f["headroom"].description
    t = {x.name: x for x in _section("TrainingWorkload").fields}
    assert t["tokens"].required and not t["seq_len"].required
    assert t["precision"].type.startswith("one of: fp32, bf16")
    assert t["layout"].section == "TrainingLayout"
    top = {x.name: x for x in _section("Scenario").fields}
    assert top["workloads"].kinds == (("training", "TrainingWorkload"),
                                      ("inference", "InferenceWorkload"),
                                      ("finetune", "FinetuneWorkload"))
    assert top["cluster"].default == "{}" and not top["cluster"].required


def test_descriptions_are_one_line() -> None:
    # Attribute docstrings wrap over lines; a hint or a table cell takes one.
    assert all("\n" not in f.description for s in reference.sections() for f in s.fields)


def test_completion_follows_sections_and_kinds() -> None:
    c = reference.completion()
    assert c["root"] == "Scenario"
    top = c["sections"]["Scenario"]
    assert top["cluster"]["section"] == "Cluster"
    assert top["workloads"]["kinds"]["inference"] == "InferenceWorkload"
    assert set(c["sections"]["Cluster"]) == {"gpus", "spares", "headroom"}
    assert c["sections"]["InferenceWorkload"]["slo"]["section"] == "Slo"
    assert "seconds" in c["sections"]["Slo"]["ttft_p99_s"]["description"]
