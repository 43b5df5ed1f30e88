"""Clusterwright: design and simulate AI infrastructure."""

__version__ = "0.1.0"
