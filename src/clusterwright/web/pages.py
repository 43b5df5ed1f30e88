"""Home page and the scenario editor: list, start from an example, validate, save, run."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse
from starlette.responses import Response

from clusterwright.store import StoreError
from clusterwright.web.config import MAX_NAME_CHARS
from clusterwright.web.examples import EXAMPLES_DIR, example_text, shipped_examples
from clusterwright.web.runner import RunQueueFullError
from clusterwright.web.state import WebState, web
from clusterwright.web.validation import Problem, check_text

router = APIRouter()
RECENT_RUNS = 50
BLANK = """# A scenario: what runs on the cluster and what limits the design.
name: "my-scenario"
workloads:
  - kind: "training"
    name: "pretrain"
    model: "llama-3.1-8b"
    tokens: 1.0e12
    gpus: 256
constraints:
  gpus: ["h100-sxm"]
"""

State = Annotated[WebState, Depends(web)]


@router.get("/")
def home(request: Request, w: State) -> Response:
    """Saved scenarios, recent runs (tick two or more to compare) and the shipped examples."""
    return w.render(request, "home.html", scenarios=w.store.list_scenarios(),
                    runs=w.store.list_runs(limit=RECENT_RUNS, with_blueprint=False),
                    examples=list(shipped_examples()), examples_dir=str(EXAMPLES_DIR))


def _bad_lines(problems: list[Problem]) -> set[int]:
    return {p.line for p in problems if p.line is not None}


def _editor(request: Request, w: WebState, *, name: str, yaml_text: str,
            scenario_id: int | None, problems: list[Problem], status_code: int = 200,
            notice: str | None = None) -> Response:
    runs = (w.store.list_runs(scenario_id, with_blueprint=False)
            if scenario_id is not None else [])
    return w.render(request, "editor.html", status_code=status_code, name=name,
                    yaml_text=yaml_text, scenario_id=scenario_id, problems=problems,
                    bad_lines=_bad_lines(problems), line_count=max(1, yaml_text.count("\n") + 1),
                    runs=runs, notice=notice, examples=list(shipped_examples()))


@router.get("/scenarios/new")
def new_scenario(request: Request, w: State, example: str | None = None) -> Response:
    """The editor, empty or holding a shipped example (``?example=<dir name>``)."""
    if example is None:
        return _editor(request, w, name="", yaml_text=BLANK, scenario_id=None, problems=[])
    text = example_text(example)
    if text is None:
        return _editor(request, w, name="", yaml_text=BLANK, scenario_id=None, problems=[],
                       status_code=404, notice=f"no shipped example named {example!r}")
    _, problems = check_text(text, w.catalog)
    return _editor(request, w, name=example, yaml_text=text, scenario_id=None,
                   problems=problems)


@router.get("/scenarios/{scenario_id}")
def show_scenario(request: Request, scenario_id: int, w: State) -> Response:
    """The editor holding saved scenario revision ``scenario_id`` and its runs."""
    try:
        row = w.store.get_scenario(scenario_id)
    except StoreError as exc:
        return w.render(request, "message.html", status_code=404, title="No such scenario",
                        message=str(exc))
    _, problems = check_text(row.yaml_text, w.catalog)
    return _editor(request, w, name=row.name, yaml_text=row.yaml_text, scenario_id=row.id,
                   problems=problems)


# Every route that checks YAML is a plain ``def`` on purpose: FastAPI runs those in its worker
# threads, so a slow parse of posted text never holds up the event loop and other requests.
@router.post("/validate")
def validate(request: Request, w: State, yaml: Annotated[str, Form()] = "") -> Response:
    """The ``#errors`` fragment (and the gutter, out of band) for the posted YAML; 200 even
    when it lists errors, since HTMX swaps in only successful answers."""
    _, problems = check_text(yaml, w.catalog)
    return w.render(request, "_errors.html", problems=problems, bad_lines=_bad_lines(problems),
                    line_count=max(1, yaml.count("\n") + 1), oob=True)


def _start(w: WebState, scenario_id: int, yaml_text: str) -> int:
    run = w.store.create_run(scenario_id)
    try:
        w.runner.submit(run.id, yaml_text)
    except RunQueueFullError as exc:
        w.store.fail_run(run.id, f"not started: {exc}")
    return run.id


@router.post("/scenarios")
def save_scenario(request: Request, w: State, name: Annotated[str, Form()] = "",
                  yaml: Annotated[str, Form()] = "",
                  action: Annotated[str, Form()] = "save") -> Response:
    """Save the editor's text as a new revision of ``name`` (the scenario's own name when
    blank); with ``action=run`` also start a plan. An invalid scenario is not saved: the
    editor comes back with its errors."""
    sc, problems = check_text(yaml, w.catalog)
    name = name.strip() or (sc.name if sc is not None else "")
    if not name:
        problems = [Problem(None, "name: give the scenario a name"), *problems]
    elif len(name) > MAX_NAME_CHARS:
        problems = [Problem(None, f"name: at most {MAX_NAME_CHARS} characters"), *problems]
    if problems or sc is None:
        return _editor(request, w, name=name, yaml_text=yaml, scenario_id=None,
                       problems=problems, status_code=422,
                       notice="not saved: fix the errors below first")
    row = w.store.save_scenario(name, yaml)
    if action == "run":
        return RedirectResponse(f"/runs/{_start(w, row.id, yaml)}", status_code=303)
    return RedirectResponse(f"/scenarios/{row.id}", status_code=303)


@router.post("/scenarios/{scenario_id}/runs")
def start_run(request: Request, scenario_id: int, w: State) -> Response:
    """Start a plan of saved scenario revision ``scenario_id``; redirect to its run page."""
    try:
        row = w.store.get_scenario(scenario_id)
    except StoreError as exc:
        return w.render(request, "message.html", status_code=404, title="No such scenario",
                        message=str(exc))
    sc, problems = check_text(row.yaml_text, w.catalog)
    if sc is None:
        return _editor(request, w, name=row.name, yaml_text=row.yaml_text,
                       scenario_id=row.id, problems=problems, status_code=422,
                       notice="not started: fix the errors below first")
    return RedirectResponse(f"/runs/{_start(w, row.id, row.yaml_text)}", status_code=303)
