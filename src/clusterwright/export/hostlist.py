"""Slurm hostlist expressions: ``gpu[00001-00032,00040]`` from a list of names."""

from __future__ import annotations

import re
from collections import defaultdict

_NAME = re.compile(r"^(.*?)(\d+)$")


def compress(names: list[str]) -> str:
    """Compress names into Slurm hostlist syntax, keeping zero padding; order is by prefix
    then number. Names without a numeric suffix are listed as they are."""
    groups: dict[tuple[str, int], list[int]] = defaultdict(list)
    plain: list[str] = []
    for n in names:
        m = _NAME.match(n)
        if m is None:
            plain.append(n)
            continue
        groups[(m.group(1), len(m.group(2)))].append(int(m.group(2)))
    parts: list[str] = []
    for (prefix, width), nums in sorted(groups.items()):
        nums = sorted(set(nums))
        ranges: list[str] = []
        start = prev = nums[0]
        tail: list[int | None] = [*nums[1:], None]
        for x in tail:
            if x is not None and x == prev + 1:
                prev = x
                continue
            a, b = f"{start:0{width}d}", f"{prev:0{width}d}"
            ranges.append(a if start == prev else f"{a}-{b}")
            if x is not None:
                start = prev = x
        if len(ranges) == 1 and "-" not in ranges[0]:
            parts.append(f"{prefix}{ranges[0]}")
        else:
            parts.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts + sorted(set(plain)))


# A hostlist names at most this many hosts: far past any cluster, small enough that a typo
# such as ``gpu[1-999999999]`` is refused before a list is built.
MAX_EXPANDED = 1_000_000
_BRACKET = re.compile(r"\[([^\[\]]*)\]")


def expand(expr: str) -> list[str]:
    """The names of a Slurm hostlist expression (``gpu[00001-00003,00007],login1`` ->
    gpu00001, gpu00002, gpu00003, gpu00007, login1), zero padding kept, several bracket
    groups in one name multiplied out (``r[1-2]n[1-2]``). ValueError on a malformed
    expression or one naming more than ``MAX_EXPANDED`` hosts (Slurm's hostlist syntax,
    slurm.conf(5) "NodeName")."""
    out: list[str] = []
    for term in _split_top(expr):
        names = [""]
        pos = 0
        for m in _BRACKET.finditer(term):
            names = [n + term[pos:m.start()] for n in names]
            nums = _ranges(m.group(1), expr)
            if len(names) * len(nums) + len(out) > MAX_EXPANDED:
                raise ValueError(f"hostlist {expr[:60]!r} names more than {MAX_EXPANDED:,} hosts")
            names = [n + x for n in names for x in nums]
            pos = m.end()
        tail = term[pos:]
        if "[" in tail or "]" in tail:
            raise ValueError(f"hostlist {expr[:60]!r}: unbalanced bracket")
        out += [n + tail for n in names]
        if len(out) > MAX_EXPANDED:
            raise ValueError(f"hostlist {expr[:60]!r} names more than {MAX_EXPANDED:,} hosts")
    return out


def _split_top(expr: str) -> list[str]:
    """Split at commas outside brackets."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in expr.strip():
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"hostlist {expr[:60]!r}: unbalanced bracket")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise ValueError(f"hostlist {expr[:60]!r}: unbalanced bracket")
    parts.append("".join(cur))
    if any(not p.strip() for p in parts):
        raise ValueError(f"hostlist {expr[:60]!r}: empty name")
    return [p.strip() for p in parts]


def _ranges(body: str, expr: str) -> list[str]:
    nums: list[str] = []
    for r in body.split(","):
        lo, sep, hi = r.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"hostlist {expr[:60]!r}: {r!r} is not a number or a range")
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a:
            raise ValueError(f"hostlist {expr[:60]!r}: range {r!r} runs backwards")
        if b - a + 1 > MAX_EXPANDED:
            raise ValueError(f"hostlist {expr[:60]!r} names more than {MAX_EXPANDED:,} hosts")
        width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
        nums += [f"{x:0{width}d}" for x in range(a, b + 1)]
    return nums
