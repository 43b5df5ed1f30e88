"""What every parser of as-built data shares: the error that names the file and line, the
bounded reader, and the split of a collected file into one chunk per device.

Operators collect per-device output in a few ways, and each parser accepts all of them:

- one file per device, named after the device (``gpu00001.json``): a directory of them, or a
  single file whose stem is the device;
- pdsh/clush output, every line prefixed with ``host: `` (pdsh(1): "output from each host is
  prefixed with the hostname");
- the ``==> NAME <==`` headers that ``head``/``tail`` print between files (coreutils
  head(1): "print headers giving file names");
- for JSON tools, one JSON object mapping each device to its document.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from clusterwright.errors import InputError
from clusterwright.spec.yamlio import YamlError, read_text

# One dump file: 100,000 LLDP neighbours in lldpctl's JSON are about 120 MB; the largest
# ibnetdiscover dump of a 131,072-GPU fabric about 60 MB.
MAX_DUMP_BYTES = 512 * 2**20
# Files in one directory given as a dump (one per device).
MAX_DUMP_FILES = 200_000
# Devices named in one dump: far past any cluster, small enough to bound memory.
MAX_DEVICES = 1_000_000


class IngestError(InputError):
    """A dump that cannot be read: the message names the file and, where known, the line.
    ``field`` is the input it came from (``lldp``, ``ibnet``, ...), so the CLI names its
    flag."""

    def __init__(self, path: str | Path, line: int | None, message: str,
                 field: str | None = None) -> None:
        where = f"{path}:{line}" if line else f"{path}"
        super().__init__(f"{where}: {message}", field=field)
        self.path = str(path)
        self.line = line


@dataclass(frozen=True)
class Chunk:
    """One device's part of a collected file: its name (None: not said) and its lines, each
    with its 1-based line number in the file."""

    device: str | None
    lines: list[tuple[int, str]]
    path: str

    @property
    def first_line(self) -> int:
        return self.lines[0][0] if self.lines else 1

    def text(self) -> str:
        return "\n".join(t for _, t in self.lines)


@dataclass
class Coverage:
    """What one input showed: the devices it reported (by the name the plan uses), names it
    gave that the plan does not know, and what it could not see."""

    source: str  # file
    kind: str  # lldp, ibnet, slurm-topology, ...
    devices: set[str] = field(default_factory=set)
    unknown: list[str] = field(default_factory=list)  # names not in the blueprint
    notes: list[str] = field(default_factory=list)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Cyclic garbage collection off while a parser builds its records, on again after (if
    it was on). A large dump decodes into millions of containers, none of them garbage, and
    the collector would otherwise walk the growing heap again and again: for 100,000 LLDP
    neighbours (134 MB of JSON) that is two thirds of ``json.loads``'s time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_dump(path: str | Path, what: str, field: str | None = None) -> str:
    """The text of a dump file (a regular file of at most ``MAX_DUMP_BYTES``)."""
    try:
        # A byte-order mark (Windows editors, Excel) is not part of the dump.
        return read_text(path, MAX_DUMP_BYTES).removeprefix("\ufeff")
    except YamlError as exc:
        # read_text already names the file
        raise IngestError(path, None, f"{what}: {str(exc).split(': ', 1)[-1]}",
                          field=field) from None


def dump_files(path: str | Path, field: str | None = None) -> list[Path]:
    """``path`` itself, or the regular files of a directory (sorted; hidden files skipped)."""
    p = Path(path)
    if p.is_dir():
        try:
            files = []
            for i, f in enumerate(sorted(p.iterdir())):
                if i >= MAX_DUMP_FILES:
                    raise IngestError(p, None, f"more than {MAX_DUMP_FILES:,} files in one "
                                      "dump directory", field=field)
                if not f.name.startswith(".") and f.is_file():
                    files.append(f)
        except OSError as exc:
            raise IngestError(p, None, f"cannot list: {exc.strerror or exc}",
                              field=field) from None
        if not files:
            raise IngestError(p, None, "an empty directory: no dump files in it", field=field)
        return files
    return [p]


_PDSH = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]{0,252}): ?(.*)$")
_HEADER = re.compile(r"^==> (.+?) <==\s*$")


def split_chunks(text: str, path: str | Path) -> list[Chunk]:
    """Split ``text`` into one chunk per device (see the module docstring); a file with no
    headers and no pdsh prefixes is one chunk of an unnamed device."""
    src = str(path)
    lines = text.splitlines()
    numbered = [(i + 1, t) for i, t in enumerate(lines)]
    nonblank = [(n, t) for n, t in numbered if t.strip()]
    if not nonblank:
        return []
    if _HEADER.match(nonblank[0][1]):
        chunks: list[Chunk] = []
        cur: list[tuple[int, str]] = []
        name: str | None = None
        for n, t in numbered:
            m = _HEADER.match(t)
            if m:
                if name is not None:
                    chunks.append(Chunk(name, cur, src))
                name, cur = _device_of(m.group(1)), []
            else:
                cur.append((n, t))
        if name is not None:
            chunks.append(Chunk(name, cur, src))
        return chunks
    if all(_PDSH.match(t) for _, t in nonblank):
        by: dict[str, list[tuple[int, str]]] = {}
        for n, t in nonblank:
            m = _PDSH.match(t)
            assert m is not None
            by.setdefault(m.group(1), []).append((n, m.group(2)))
        if len(by) > MAX_DEVICES:
            raise IngestError(src, None, f"more than {MAX_DEVICES:,} devices")
        return [Chunk(dev, ls, src) for dev, ls in by.items()]
    return [Chunk(None, numbered, src)]


def _device_of(header: str) -> str:
    """``==> dumps/gpu00001.json <==`` names device gpu00001."""
    return Path(header.strip()).stem or header.strip()


def iter_chunks(path: str | Path, what: str, field: str | None = None) -> Iterator[Chunk]:
    """Every device chunk of a file or directory; an unnamed chunk takes the file's stem."""
    for f in dump_files(path, field):
        text = read_dump(f, what, field)
        if not text.strip():
            # A collection that failed leaves an empty file: say so rather than "no input".
            raise IngestError(f, 1, f"empty {what}", field=field)
        for c in split_chunks(text, f):
            yield c if c.device is not None else Chunk(f.stem, c.lines, c.path)


def short_name(name: str) -> str:
    """A device name without its DNS domain (``leaf1.dc.example.com`` -> ``leaf1``)."""
    return name.split(".", 1)[0] if name and not name[0].isdigit() else name


class Names:
    """Resolves the names a dump gives devices to the blueprint's names: exact, then case-
    insensitive, then without the DNS domain. Unknown names resolve to None."""

    def __init__(self, planned: set[str] | dict[str, object]) -> None:
        self.exact = set(planned)
        self.folded = {n.lower(): n for n in planned}

    def resolve(self, name: str) -> str | None:
        if name in self.exact:
            return name
        low = name.strip().lower()
        hit = self.folded.get(low)
        if hit is None:
            hit = self.folded.get(short_name(low))
        return hit
