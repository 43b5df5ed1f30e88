"""Hypothesis profiles for the fuzzing suite.

``ci`` (the default, every push): derandomized, so a run is repeatable and a failure
reproduces from the same commit. ``long``: a random search of many more cases, the documented
command for a deeper run (see docs/hardening.md)::

    CW_FUZZ=long .venv/bin/python -m pytest tests/fuzz -p no:cacheprovider
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow,
                                                        HealthCheck.function_scoped_fixture]}
settings.register_profile("ci", max_examples=60, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=3000, **_COMMON)
settings.load_profile(os.environ.get("CW_FUZZ", "ci"))
