"""The live twin: the cluster as built compared with its blueprint.

``twin.blueprint`` reads a blueprint directory back; ``twin.diff`` compares it with what
``ingest`` read from the running cluster; ``twin.slow`` finds fail-slow nodes;
``twin.impact`` prices each finding in GPU-hours lost per day with the network simulator,
the training step model and the scheduling twin; ``twin.run`` ties them together
(``twin diff``); ``twin.lab`` proves it on real lldpd and FRR daemons (``twin lab``);
``twin.synth`` writes as-built data with known faults (tests and benchmarks).

Layer: with ``ingest`` and ``lab`` at the faces' level, and above them (it imports both, and
plan/, sim/ and design/ for the impact); the CLI and the web import it.
"""
