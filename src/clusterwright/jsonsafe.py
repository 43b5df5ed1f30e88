"""The one JSON cleaner: what blueprint.json, ``--json``, the store and the web all write.

JSON has no NaN or infinity (they become null), keys are strings, tuples are lists and numpy
scalars are plain numbers. Everything that leaves the process as JSON goes through
:func:`jsonable`, so a value reads the same in every output.
"""

from __future__ import annotations

import math
from typing import Any


def jsonable(obj: Any) -> Any:
    """``obj`` with NaN/inf as None, dict keys as str, tuples as lists, numpy scalars and
    arrays as Python numbers and lists. Other objects are returned as they are."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, int | str):
        return obj
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy array or scalar
        return jsonable(obj.tolist())
    if hasattr(obj, "item") and callable(obj.item):
        return jsonable(obj.item())
    return obj
