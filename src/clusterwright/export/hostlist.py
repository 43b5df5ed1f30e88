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
