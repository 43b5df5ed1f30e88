"""Splitting the scenario loader's messages into (line, message) items for the editor."""

from __future__ import annotations

from clusterwright.catalog.registry import Catalog
from clusterwright.web.validation import Problem, check_text, problems_of


def test_syntax_error_line_comes_from_the_source_prefix() -> None:
    msg = "<scenario>:7: invalid YAML: expected ',' or ']'"
    assert problems_of(msg) == [Problem(7, "invalid YAML: expected ',' or ']'")]


def test_one_item_per_field_line_and_the_header_is_dropped() -> None:
    msg = ("<scenario>: invalid scenario:\n"
           "workloads[0].gpus (line 14): Input should be greater than 0\n"
           "constraints.pue (line 22): Input should be less than or equal to 3")
    assert problems_of(msg) == [
        Problem(14, "workloads[0].gpus (line 14): Input should be greater than 0"),
        Problem(22, "constraints.pue (line 22): Input should be less than or equal to 3"),
    ]


def test_a_message_without_a_line_is_kept_whole() -> None:
    assert problems_of("<scenario>: a scenario is a mapping with name, workloads, ...") == [
        Problem(None, "a scenario is a mapping with name, workloads, ...")]


def test_a_repeated_workload_name_points_at_the_second(catalog: Catalog) -> None:
    text = ('name: "x"\nworkloads:\n'
            '  - {kind: "training", name: "a", model: "llama-3.1-8b", tokens: 1.0e9, gpus: 8}\n'
            '  - {kind: "training", name: "a", model: "llama-3.1-8b", tokens: 1.0e9, gpus: 8}\n')
    sc, problems = check_text(text, catalog)
    assert sc is None and [p.line for p in problems] == [4]
    assert "used twice" in problems[0].message


def test_too_many_workloads_is_a_cap_at_the_workloads_key(catalog: Catalog) -> None:
    w = '  - {kind: "training", name: "w%d", model: "llama-3.1-8b", tokens: 1.0e9, gpus: 8}\n'
    text = 'name: "x"\nworkloads:\n' + "".join(w % i for i in range(9))
    sc, problems = check_text(text, catalog)
    assert sc is None and len(problems) == 1
    # Line 2 is the "workloads:" key (the loader points at the key of a block).
    assert problems[0].line == 2 and "at most 8" in problems[0].message


def test_a_valid_scenario_has_no_problem(catalog: Catalog) -> None:
    text = ('name: "x"\nworkloads:\n'
            '  - {kind: "training", name: "a", model: "llama-3.1-8b", tokens: 1.0e9, gpus: 8}\n')
    sc, problems = check_text(text, catalog)
    assert problems == [] and sc is not None and sc.name == "x"


def test_long_messages_and_long_lists_are_cut_for_the_page() -> None:
    # A message may quote its input (a long value, or one repeated by aliases).
    long = "workloads[0].model (line 4): must be a string, got [" + "'x', " * 10_000 + "]"
    (p,) = problems_of(long)
    assert p.line == 4 and len(p.message) < 600
    assert p.message.endswith(f"... ({len(long) - 500:,} more characters)")
    many = "<scenario>: invalid scenario:\n" + "\n".join(
        f"workloads[{i}].gpus (line {i + 3}): Input should be greater than 0" for i in range(80))
    problems = problems_of(many)
    assert len(problems) == 51 and problems[49].line == 52
    assert problems[50] == Problem(None, "... and 30 more errors")


def test_a_contradiction_of_two_fields_is_shown_at_both_lines(catalog: Catalog) -> None:
    text = ('name: "x"\nworkloads:\n'
            '  - {kind: training, name: a, model: "llama-3.1-8b", tokens: 1.0e10, gpus: 8}\n'
            'fabric:\n  protocol: "infiniband"\n  switch: "sn5600"\n')
    sc, problems = check_text(text, catalog)
    assert sc is None
    assert [p.line for p in problems] == [6, 5]
    assert all("fabric.switch (line 6)" in p.message and "fabric.protocol (line 5)" in p.message
               for p in problems)
