"""Safe YAML loading with line numbers (clusterwright.spec.yamlio)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, PositiveInt, ValidationError

from clusterwright.spec.yamlio import (
    LoadedYaml,
    YamlError,
    describe_validation_error,
    format_loc,
    load,
    loads,
    parse_loc,
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
