"""Predict published measurements and report the error (``clusterwright validate``)."""
