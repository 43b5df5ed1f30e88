"""What the routes share: settings, the store, the run manager, templates and the catalog."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import jinja2
from fastapi import Request
from fastapi.templating import Jinja2Templates
from starlette.responses import Response

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.store import Store
from clusterwright.web.config import WebConfig
from clusterwright.web.runner import RunManager


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("clusterwright.web", "templates"),
        autoescape=True,  # every name, message and YAML text shown is user input
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@dataclass
class WebState:
    """One app's shared objects (``app.state.web``)."""

    config: WebConfig
    store: Store
    runner: RunManager
    templates: Jinja2Templates = field(
        default_factory=lambda: Jinja2Templates(env=_environment()))

    @functools.cached_property
    def catalog(self) -> Catalog:
        """The packaged catalog plus $CLUSTERWRIGHT_CATALOG, loaded once."""
        return load_catalog()

    def render(self, request: Request, template: str, status_code: int = 200,
               **context: Any) -> Response:
        """Render ``template`` with ``context`` (autoescaped)."""
        return self.templates.TemplateResponse(request, template, context, status_code=status_code)


def web(request: Request) -> WebState:
    """The WebState of the app serving ``request``."""
    state: WebState = request.app.state.web
    return state
