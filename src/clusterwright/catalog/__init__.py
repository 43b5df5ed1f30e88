"""Hardware and model catalog: YAML data validated by pydantic, looked up by id."""

from clusterwright.catalog.registry import Catalog, load_catalog, resolve_model
from clusterwright.catalog.schema import (
    Cable,
    CloudOffer,
    Dtype,
    Gpu,
    ModelArch,
    Nic,
    Server,
    Switch,
    Transceiver,
)

__all__ = [
    "Cable",
    "Catalog",
    "CloudOffer",
    "Dtype",
    "Gpu",
    "ModelArch",
    "Nic",
    "Server",
    "Switch",
    "Transceiver",
    "load_catalog",
    "resolve_model",
]
