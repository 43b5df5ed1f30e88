"""Validate editor text as ``clusterwright check`` does, as a list of (line, message) items.

The scenario loader (safe YAML, pydantic) and the catalog reference check already name the
field and its YAML line in their messages ("workloads[0].gpus (line 14): ..." or
"<scenario>:7: invalid YAML ..."); this module only splits them into items for the page and
adds the web's size caps, each with the line of the field it is about.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from clusterwright.catalog.references import resolve
from clusterwright.catalog.registry import Catalog
from clusterwright.errors import ClusterwrightError
from clusterwright.spec.scenario import (
    FinetuneWorkload,
    InferenceWorkload,
    Scenario,
    TrainingWorkload,
    loads_scenario,
)
from clusterwright.spec.yamlio import LoadedYaml
from clusterwright.web.config import (
    MAX_GPUS,
    MAX_PROBLEM_CHARS,
    MAX_PROBLEMS,
    MAX_QPS,
    MAX_WORKLOADS,
)

SOURCE = "<scenario>"
_PAREN_LINE = re.compile(r"\(line (\d+)\)")
_SRC_LINE = re.compile(rf"^{re.escape(SOURCE)}:(\d+):\s*")
_SRC = re.compile(rf"^{re.escape(SOURCE)}:\s*")
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Problem:
    """One error of the editor text: its 1-based YAML line (None: the whole document)."""

    line: int | None
    message: str


def problems_of(message: str) -> list[Problem]:
    """Split a ScenarioError message into one Problem per error line."""
    out: list[Problem] = []
    for raw in message.splitlines():
        text = raw.strip()
        if not text:
            continue
        line: int | None = None
        m = _SRC_LINE.match(text)
        if m:
            line = int(m.group(1))
            text = text[m.end():]
        else:
            text = _SRC.sub("", text)
            p = _PAREN_LINE.search(text)
            if p:
                line = int(p.group(1))
        # "invalid scenario:" only introduces the lines that follow it.
        if text.endswith(":") and line is None and len(message.splitlines()) > 1:
            continue
        out.append(Problem(line, text))
        # A contradiction names two fields: show the message at the other field's line too.
        out += [Problem(n, text) for n in dict.fromkeys(
            int(x) for x in _PAREN_LINE.findall(text)) if n != line]
    return shown(out or [Problem(None, message.strip() or "invalid scenario")])


def shown(problems: list[Problem]) -> list[Problem]:
    """``problems`` cut to what a page shows: MAX_PROBLEMS items of MAX_PROBLEM_CHARS each,
    then one item saying how many more there are."""
    out = [p if len(p.message) <= MAX_PROBLEM_CHARS else
           Problem(p.line, p.message[:MAX_PROBLEM_CHARS]
                   + f"... ({len(p.message) - MAX_PROBLEM_CHARS:,} more characters)")
           for p in problems[:MAX_PROBLEMS]]
    if len(problems) > MAX_PROBLEMS:
        out.append(Problem(None, f"... and {len(problems) - MAX_PROBLEMS:,} more errors"))
    return out


def cap_problems(sc: Scenario, doc: LoadedYaml) -> list[Problem]:
    """The web's size caps (``web/config.py``), each naming its field and line."""
    out: list[Problem] = []
    if len(sc.workloads) > MAX_WORKLOADS:
        out.append(Problem(doc.line_of(("workloads",)),
                           f"workloads: {len(sc.workloads)} workloads; the web workbench plans "
                           f"at most {MAX_WORKLOADS} (use `clusterwright plan` for more)"))
    for i, w in enumerate(sc.workloads):
        gpus = w.gpus if isinstance(w, TrainingWorkload | FinetuneWorkload) else None
        if gpus is not None and gpus > MAX_GPUS:
            loc = ("workloads", i, "gpus")
            out.append(Problem(doc.line_of(loc),
                               f"workloads[{i}].gpus: {gpus:,} GPUs; the web workbench plans at "
                               f"most {MAX_GPUS:,} (use `clusterwright plan` for more)"))
        if isinstance(w, InferenceWorkload) and w.qps > MAX_QPS:
            loc = ("workloads", i, "qps")
            out.append(Problem(doc.line_of(loc),
                               f"workloads[{i}].qps: {w.qps:g} requests/s; the web workbench "
                               f"plans at most {MAX_QPS:g} (use `clusterwright plan` for more)"))
    return out


def check_text(text: str, cat: Catalog) -> tuple[Scenario | None, list[Problem]]:
    """Parse, validate and resolve ``text``; the scenario when it has no problem.

    Never raises for any text: an error the loader did not foresee (a list where a name
    belongs, nesting too deep) is a problem too, so the editor shows it rather than a 500.
    Blocking: routes call it from a worker thread, never on the event loop."""
    if not text.strip():
        return None, [Problem(None, "the scenario is empty; start from a shipped example")]
    try:
        sc, doc = loads_scenario(text, SOURCE)
        resolve(sc, cat, doc)
        caps = cap_problems(sc, doc)
    except ClusterwrightError as exc:
        return None, problems_of(str(exc))
    except Exception as exc:
        # A bug below the face, not the user's fault alone: keep the traceback in the log.
        _log.exception("scenario check failed unexpectedly")
        detail = f"{type(exc).__name__}: {exc}"
        return None, [Problem(None, (
            f"the scenario could not be checked ({detail[:200]}); a field probably has the "
            "wrong type, e.g. a list or mapping where a name or number belongs"))]
    return (None, caps) if caps else (sc, [])
