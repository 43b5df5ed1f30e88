"""Slurm hostlist compression (``export.hostlist.compress``) and a reference expander.

``expand`` is written independently of the code under test so that the fabric export tests can
read ``Nodes=`` / ``nodes:`` values back into host names.
"""

from __future__ import annotations

import re

import pytest

from clusterwright.export.hostlist import compress

_BRACKET = re.compile(r"^([^\[\]]*)\[([^\[\]]+)\]([^\[\]]*)$")


def _split_top(expr: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(expr):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in {expr!r}")
        elif ch == "," and depth == 0:
            parts.append(expr[start:i])
            start = i + 1
    if depth != 0:
        raise ValueError(f"unbalanced '[' in {expr!r}")
    parts.append(expr[start:])
    return parts


def expand(expr: str) -> list[str]:
    """Expand a Slurm hostlist expression (``gpu[001-003,007],login``) into names, in order.

    Zero padding follows the width of the range's first bound, as Slurm does.
    """
    names: list[str] = []
    if not expr:
        return names
    for token in _split_top(expr):
        if not token:
            raise ValueError(f"empty element in {expr!r}")
        m = _BRACKET.match(token)
        if m is None:
            if "[" in token or "]" in token:
                raise ValueError(f"cannot parse {token!r}")
            names.append(token)
            continue
        prefix, body, suffix = m.groups()
        for r in body.split(","):
            lo, _, hi = r.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                raise ValueError(f"bad range {r!r} in {token!r}")
            width = len(lo)
            for n in range(int(lo), int(hi or lo) + 1):
                names.append(f"{prefix}{n:0{width}d}{suffix}")
    return names


# ---------------------------------------------------------------------------- the expander


def test_expander_reads_slurm_examples() -> None:
    assert expand("dev[0-5]") == [f"dev{i}" for i in range(6)]
    assert expand("s[0-2],login") == ["s0", "s1", "s2", "login"]
    assert expand("gpu[00009-00011]") == ["gpu00009", "gpu00010", "gpu00011"]
    assert expand("a[1,3],b7") == ["a1", "a3", "b7"]


def test_expander_rejects_unbalanced_brackets() -> None:
    with pytest.raises(ValueError):
        expand("gpu[1-3")


# ---------------------------------------------------------------------------- compress


def test_consecutive_names_become_one_range() -> None:
    assert compress(["gpu1", "gpu2", "gpu3", "gpu4"]) == "gpu[1-4]"


def test_zero_padding_is_kept() -> None:
    names = [f"gpu{i:05d}" for i in range(1, 33)]
    assert compress(names) == "gpu[00001-00032]"
    assert compress(["su001", "su002"]) == "su[001-002]"


def test_gaps_split_ranges_and_lone_numbers_stand_alone() -> None:
    names = ["gpu001", "gpu002", "gpu004", "gpu006", "gpu007", "gpu008"]
    assert compress(names) == "gpu[001-002,004,006-008]"


def test_a_single_numbered_name_has_no_brackets() -> None:
    assert compress(["gpu00001"]) == "gpu00001"


def test_input_order_and_duplicates_do_not_matter() -> None:
    assert compress(["n3", "n1", "n2", "n1"]) == "n[1-3]"


def test_mixed_prefixes_get_one_group_each() -> None:
    out = compress(["n1", "m2", "n3", "n2", "m1"])
    assert out == "m[1-2],n[1-3]"
    assert sorted(expand(out)) == sorted(["n1", "m2", "n3", "n2", "m1"])


def test_different_widths_are_different_groups() -> None:
    # gpu9 and gpu10 must not become gpu[09-10] (that would rename gpu9).
    out = compress(["gpu9", "gpu10", "gpu01"])
    assert sorted(expand(out)) == ["gpu01", "gpu10", "gpu9"]


def test_prefix_may_contain_digits() -> None:
    assert compress(["rack1-n2", "rack1-n3"]) == "rack1-n[2-3]"


def test_names_without_digits_are_listed_as_they_are() -> None:
    assert compress(["login"]) == "login"
    out = compress(["login", "gpu1", "admin"])
    assert sorted(expand(out)) == ["admin", "gpu1", "login"]


def test_empty_list_is_an_empty_expression() -> None:
    assert compress([]) == ""


def test_duplicate_names_without_digits_are_listed_once() -> None:
    assert compress(["login", "login"]) == "login"


@pytest.mark.parametrize(
    "names",
    [
        [f"gpu{i:05d}" for i in (1, 2, 3, 5, 8, 9, 10, 100, 101)],
        ["a1", "a2", "b01", "b02", "b10", "c", "a10"],
        [f"su{i:03d}" for i in range(1, 41)],
        ["x0", "x00", "x000"],
    ],
)
def test_expand_inverts_compress(names: list[str]) -> None:
    assert sorted(expand(compress(names))) == sorted(set(names))
