"""Planners: decide by calling the models, designers and simulators below; return typed results.
Layer 6 of DESIGN.md, between ``sim`` and ``export``/``report``."""
