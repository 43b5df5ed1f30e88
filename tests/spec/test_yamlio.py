"""Safe YAML loading with line numbers (clusterwright.spec.yamlio)."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, PositiveInt, ValidationError

from clusterwright.spec import yamlio
from clusterwright.spec.yamlio import (
    LoadedYaml,
    YamlError,
    describe_validation_error,
    format_loc,
    load,
    loads,
    parse_loc,
    read_text,
)

NESTED = """\
a:
  b:
    c: 1
    d: [10,
        20]
  e:
    - x: 1
      y: 2
    - z: 3
f: "top"
"""


def test_nested_values_parse_to_plain_data() -> None:
    doc = loads(NESTED)
    assert doc.data == {
        "a": {"b": {"c": 1, "d": [10, 20]}, "e": [{"x": 1, "y": 2}, {"z": 3}]},
        "f": "top",
    }


@pytest.mark.parametrize(
    ("loc", "line"),
    [
        (("a",), 1),
        (("a", "b"), 2),
        (("a", "b", "c"), 3),
        (("a", "b", "d"), 4),
        (("a", "b", "d", 0), 4),
        (("a", "b", "d", 1), 5),
        (("a", "e"), 6),
        (("a", "e", 0), 7),
        (("a", "e", 0, "y"), 8),
        (("a", "e", 1, "z"), 9),
        (("f",), 10),
    ],
)
def test_line_of_nested_keys_and_items(loc: tuple[str | int, ...], line: int) -> None:
    assert loads(NESTED).line_of(loc) == line


def test_a_key_with_a_nested_block_points_at_the_key_not_the_block() -> None:
    doc = loads("outer:\n\n\n  inner: 1\n")
    assert doc.line_of(("outer",)) == 1
    assert doc.line_of(("outer", "inner")) == 4


def test_line_of_an_unknown_path_falls_back_to_its_deepest_known_prefix() -> None:
    doc = loads(NESTED)
    assert doc.line_of(("a", "e", 1, "missing", "deeper")) == 9
    assert doc.line_of(("nope",)) == 1  # the document itself


def test_line_numbers_count_comments_and_blank_lines() -> None:
    doc = loads("# header\n\n# more\nname: x\n\nlist:\n  # note\n  - 1\n")
    assert doc.line_of(("name",)) == 4
    assert doc.line_of(("list", 0)) == 8


def test_format_loc_writes_dotted_paths_with_indices() -> None:
    assert format_loc(("workloads", 2, "gpus")) == "workloads[2].gpus"
    assert format_loc(("constraints", "gpus", 0)) == "constraints.gpus[0]"
    assert format_loc(()) == ""


def test_duplicate_top_level_key_is_rejected_with_its_line() -> None:
    with pytest.raises(YamlError, match=r"f\.yaml:3: duplicate key 'a' in the top level"):
        loads("a: 1\nb: 2\na: 3\n", "f.yaml")


def test_duplicate_nested_key_names_its_parent_path() -> None:
    with pytest.raises(YamlError) as exc:
        loads("w:\n  - name: x\n    qps: 1\n    qps: 2\n", "s.yaml")
    msg = str(exc.value)
    assert "s.yaml:4" in msg
    assert "duplicate key 'qps'" in msg
    assert "w[0]" in msg


def test_keys_equal_after_yaml_typing_are_duplicates() -> None:
    # YAML 1.1: `yes` and `true` are both the boolean True.
    with pytest.raises(YamlError, match="duplicate key"):
        loads("true: 1\nyes: 2\n")


def test_same_key_in_sibling_mappings_is_fine() -> None:
    assert loads("- a: 1\n- a: 2\n").data == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: 1\nb: [1,\n", 3),
        ("a: 1\n  b: 2\n", 2),
        ("a: 1\nb: 'open\n", 3),
        ("a: 1\nb: *undefined\n", 2),
    ],
    ids=["unclosed-flow", "bad-indent", "unclosed-quote", "undefined-alias"],
)
def test_syntax_error_names_file_and_line(text: str, line: int) -> None:
    with pytest.raises(YamlError) as exc:
        loads(text, "bad.yaml")
    assert f"bad.yaml:{line}:" in str(exc.value)
    assert "invalid YAML" in str(exc.value)


def test_non_scalar_key_is_rejected() -> None:
    with pytest.raises(YamlError, match=r"k\.yaml:2: mapping keys must be scalars"):
        loads("a: 1\n? [1, 2]\n: 3\n", "k.yaml")


def test_empty_document_is_none() -> None:
    assert loads("").data is None
    assert loads("# only a comment\n").data is None


def test_load_reads_a_file_and_remembers_its_path(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text("a:\n  b: 2\n")
    doc = load(f)
    assert doc.data == {"a": {"b": 2}}
    assert doc.path == str(f)
    assert doc.line_of(("a", "b")) == 2


def test_load_of_a_missing_file_is_a_yaml_error(tmp_path: Path) -> None:
    with pytest.raises(YamlError, match="no such file"):
        load(tmp_path / "absent.yaml")


def test_load_of_a_non_utf8_file_is_a_yaml_error(tmp_path: Path) -> None:
    f = tmp_path / "latin1.yaml"
    f.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(YamlError, match="cannot read"):
        load(f)


# ------------------------------------------------------------------------ safe loading


def test_python_apply_tag_is_never_executed(tmp_path: Path) -> None:
    target = tmp_path / "pwned"
    text = f'name: !!python/object/apply:os.makedirs ["{target}"]\n'
    try:
        doc = loads(text)
    except Exception:  # refusing is fine; running the call is not
        doc = None
    assert not target.exists()
    if doc is not None:  # if it loads at all, only plain data comes back
        assert isinstance(doc.data["name"], list | str | type(None))


def test_python_object_tag_never_builds_a_python_object() -> None:
    text = "x: !!python/object:collections.OrderedDict {a: 1}\n"
    try:
        doc = loads(text)
    except Exception:  # refusing is fine; building the object is not
        return
    assert type(doc.data["x"]) is dict


@pytest.mark.parametrize(
    "text",
    [
        'name: !!python/object/apply:os.system ["true"]\n',
        "name: !!python/object:collections.OrderedDict {a: 1}\n",
        "name: !!python/name:os.system ''\n",
    ],
    ids=["apply-on-sequence", "object-on-mapping", "name-on-scalar"],
)
def test_python_tag_is_rejected_with_a_clear_error(text: str) -> None:
    with pytest.raises(YamlError, match=r"evil\.yaml:1"):
        loads(text, "evil.yaml")


def test_unknown_tag_is_a_yaml_error_with_its_line() -> None:
    with pytest.raises(YamlError, match=r"t\.yaml:2"):
        loads('a: 1\nb: !custom "x"\n', "t.yaml")


def test_merge_key_is_supported_or_a_clear_error() -> None:
    text = "base: &b {x: 1}\nm:\n  <<: *b\n  y: 2\n"
    try:
        doc = loads(text, "m.yaml")
    except YamlError:
        return
    assert doc.data["m"] == {"x": 1, "y": 2}


def test_anchors_and_aliases_load_as_copies_of_plain_data() -> None:
    doc = loads("a: &x {k: 1}\nb: *x\n")
    assert doc.data == {"a": {"k": 1}, "b": {"k": 1}}


# ------------------------------------------------------------ validation error messages


class _Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: PositiveInt


class _Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    items: list[_Inner]


def _describe(text: str) -> str:
    doc = loads(text, "v.yaml")
    with pytest.raises(ValidationError) as exc:
        _Outer.model_validate(doc.data)
    return describe_validation_error(exc.value, doc)


def test_validation_error_names_path_and_line_of_each_problem() -> None:
    msg = _describe('name: "x"\nitems:\n  - n: 1\n  - n: -2\n    extra: 3\n')
    lines = msg.splitlines()
    assert "items[1].n (line 4): Input should be greater than 0" in lines
    assert "items[1].extra (line 5): unknown field" in lines


def test_validation_error_for_a_missing_field_points_at_its_parent() -> None:
    msg = _describe('name: "x"\nitems:\n  - {}\n')
    assert "items[0].n (line 3): required field is missing" in msg


def test_validation_error_without_a_document_has_no_line() -> None:
    with pytest.raises(ValidationError) as exc:
        _Outer.model_validate({"name": "x", "items": [{"n": 0}]})
    assert describe_validation_error(exc.value, None) == (
        "items[0].n: Input should be greater than 0"
    )


def test_loaded_yaml_is_a_plain_container() -> None:
    doc = LoadedYaml(data={"a": 1}, path="p", lines={("a",): 7})
    assert doc.line_of(("a", "b")) == 7
    assert doc.line_of(("z",)) is None


@pytest.mark.parametrize("loc", [
    ("workloads", 2, "gpus"),
    ("workloads", 0, "options", "schedule"),
    ("constraints", "gpus", 1),
    ("a",),
])
def test_parse_loc_inverts_format_loc(loc: tuple[str | int, ...]) -> None:
    assert parse_loc(format_loc(loc)) == loc


# ------------------------------------------------------------------- bounded loading (#19)

# The "billion laughs": nine aliases per level, nine levels, 9**9 strings if expanded.
BOMB = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(
        f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n"
        for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
)


def _peak_bytes(text: str) -> int:
    """Peak Python memory while loading ``text`` (which must be refused)."""
    tracemalloc.start()
    try:
        with pytest.raises(YamlError):
            loads(text, "b.yaml")
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_billion_laughs_is_refused_within_the_alias_budget() -> None:
    assert len(BOMB) < 400
    with pytest.raises(YamlError, match=r"b\.yaml:\d+: aliases expand to more than 100,000"):
        loads(BOMB, "b.yaml")
    assert _peak_bytes(BOMB) < 100e6  # the unbounded loader went past 4 GB


def test_a_one_megabyte_alias_bomb_stays_under_100_mb() -> None:
    wide = "a: &a [" + ",".join(["x"] * 1000) + "]\nb: [" + ",".join(["*a"] * 300_000) + "]\n"
    text = wide[:1_000_000]
    assert _peak_bytes(text) < 100e6


def test_aliases_within_the_budget_expand_as_copies() -> None:
    doc = loads("a: &x [1, 2]\nb: [*x, *x, *x]\n")
    assert doc.data["b"] == [[1, 2]] * 3


@pytest.mark.parametrize("text", ["{" * 5000 + "}" * 5000, "[" * 5000 + "]" * 5000,
                                  "a: " + "[" * 200_000])
def test_thousands_of_nested_brackets_are_a_yaml_error_not_a_recursion_error(text: str) -> None:
    with pytest.raises(YamlError, match=r"n\.yaml:1: .*nest"):
        loads(text, "n.yaml")


def _block(depth: int) -> str:
    return "".join("  " * i + "- \n" for i in range(depth - 1)) + "  " * (depth - 1) + "- 1\n"


def test_nesting_up_to_max_depth_loads_and_one_more_is_refused() -> None:
    assert yamlio.MAX_DEPTH == 64
    doc = loads(_block(yamlio.MAX_DEPTH))
    v = doc.data
    for _ in range(yamlio.MAX_DEPTH - 1):
        v = v[0]
    assert v == [1]
    with pytest.raises(YamlError, match=rf"d\.yaml:{yamlio.MAX_DEPTH + 1}: .*more than 64 deep"):
        loads(_block(yamlio.MAX_DEPTH + 1), "d.yaml")


def test_an_alias_cannot_nest_its_anchor_past_max_depth() -> None:
    deep = "[" * 60 + "]" * 60
    loads(f"a: &a {deep}\nb: [[[*a]]]\n")  # 1 + 3 + 60 = 64 levels
    with pytest.raises(YamlError, match=r"a\.yaml:2: .*more than 64 deep"):
        loads(f"a: &a {deep}\nb: [[[[*a]]]]\n", "a.yaml")


def test_more_than_max_nodes_values_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlio, "MAX_NODES", 100)
    loads("[" + ",".join(["1"] * 99) + "]")  # 99 items and the list
    with pytest.raises(YamlError, match=r"big\.yaml:1: more than 100 keys and values"):
        loads("[" + ",".join(["1"] * 100) + "]", "big.yaml")


def test_text_longer_than_max_bytes_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlio, "MAX_BYTES", 10)
    with pytest.raises(YamlError, match="more than the limit of 10"):
        loads("a: 12345678\n", "t.yaml")


def test_limits_are_named_constants() -> None:
    assert (yamlio.MAX_BYTES, yamlio.MAX_DEPTH, yamlio.MAX_NODES, yamlio.MAX_ALIAS_NODES) == (
        4 * 2**20, 64, 200_000, 100_000)


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    with pytest.raises(YamlError, match=r"r\.yaml:1: invalid YAML: alias \*a inside"):
        loads("a: &a [1, *a]\n", "r.yaml")


def test_an_alias_is_an_independent_copy() -> None:
    doc = loads("a: &x {k: [1]}\nb: *x\n")
    doc.data["b"]["k"].append(2)
    assert doc.data["a"] == {"k": [1]}


def test_an_alias_carries_its_anchors_lines_under_its_own_path() -> None:
    doc = loads("a: &x\n  k:\n    - 1\nb:\n  - *x\n")
    assert doc.line_of(("b", 0)) == 5
    assert doc.line_of(("b", 0, "k")) == 2
    assert doc.line_of(("b", 0, "k", 0)) == 3


def test_a_scalar_alias_may_be_a_key_and_a_list_alias_may_not() -> None:
    assert loads("a: &k x\n*k : 2\n").data == {"a": "x", "x": 2}
    with pytest.raises(YamlError, match=r"k\.yaml:2: mapping keys must be scalars"):
        loads("a: &k [x]\n*k : 2\n", "k.yaml")


def test_a_second_document_is_refused() -> None:
    with pytest.raises(YamlError, match=r"m\.yaml:2: invalid YAML: a second document"):
        loads("a: 1\n---\nb: 2\n", "m.yaml")


@pytest.mark.parametrize(("text", "value"), [
    ("x: 1e9", 1e9), ("x: 1E+9", 1e9), ("x: -2.5e-3", -2.5e-3), ("x: 15.0e12", 15.0e12),
    ("x: 1.0e+9", 1e9), ("x: 8", 8), ("x: 0.5", 0.5),
])
def test_numbers_with_an_exponent_are_floats_as_in_yaml_1_2(text: str, value: float) -> None:
    got = loads(text).data["x"]
    assert got == value
    assert type(got) is type(value)


@pytest.mark.parametrize("text", ["x: '1e9'", 'x: "8"', "x: ! 8"])
def test_quoted_or_non_specific_scalars_stay_strings(text: str) -> None:
    assert isinstance(loads(text).data["x"], str)


@pytest.mark.parametrize(("text", "what"), [
    ("x: 2024-02-30", "not a valid timestamp"),
    ("x: " + "9" * 5000, "not a valid int"),
])
def test_a_scalar_python_cannot_build_is_a_yaml_error_with_its_line(text: str,
                                                                  what: str) -> None:
    with pytest.raises(YamlError, match=rf"s\.yaml:2: .*{what}"):
        loads("a: 1\n" + text, "s.yaml")


@pytest.mark.parametrize("tag", ["!!binary aGVsbG8=", "!!set {a, b}", "!!omap [a: 1]"])
def test_non_plain_data_tags_are_refused(tag: str) -> None:
    with pytest.raises(YamlError, match=r"t\.yaml:1: tag .* is not allowed"):
        loads(f"x: {tag}\n", "t.yaml")


# --------------------------------------------------------------------- reading files (#19)


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_load_refuses_a_device_without_reading_it(special: str) -> None:
    if not Path(special).exists():
        pytest.skip(f"no {special}")
    with pytest.raises(YamlError, match="cannot read: not a regular file"):
        load(special)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_load_refuses_a_fifo_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    with pytest.raises(YamlError, match="cannot read: not a regular file"):
        load(fifo)  # opening a FIFO for reading would block until a writer came


def test_load_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises(YamlError, match="cannot read: a directory"):
        load(tmp_path)


def test_load_refuses_a_file_larger_than_max_bytes(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "big.yaml"
    f.write_text("a: " + "x" * 100 + "\n")
    monkeypatch.setattr(yamlio, "MAX_BYTES", 50)
    with pytest.raises(YamlError, match="cannot read: larger than the limit of 50 bytes"):
        load(f)


def test_read_text_reads_at_most_limit_plus_one_bytes(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text("abc")
    assert read_text(f, limit=3) == "abc"
    with pytest.raises(YamlError, match="larger than the limit of 2 bytes"):
        read_text(f, limit=2)


def test_error_messages_quote_values_briefly() -> None:
    assert yamlio.short_repr("y" * 10_000).count("y") < 50
    assert yamlio.short_repr([["x" * 3000] * 300] * 300) == "[[...], [...], [...], ...]"
    doc = loads("name: " + "[" + ",".join(["'" + "x" * 3000 + "'"] * 300) + "]\nitems: []\n")
    with pytest.raises(ValidationError) as exc:
        _Outer.model_validate(doc.data)
    assert len(describe_validation_error(exc.value, doc)) < 300


def test_a_validation_error_lists_at_most_max_error_lines_problems() -> None:
    doc = loads("name: x\nitems: [" + ",".join(["{n: -1}"] * 50) + "]\n")
    with pytest.raises(ValidationError) as exc:
        _Outer.model_validate(doc.data)
    lines = describe_validation_error(exc.value, doc).splitlines()
    assert len(lines) == yamlio.MAX_ERROR_LINES + 1
    assert lines[-1] == "... and 30 more"
