from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.lab import LabError, frr, preflight, runner


def test_preflight_names_everything_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(frr, "ZEBRA", Path("/nonexistent/zebra"))
    monkeypatch.setattr(frr, "VTYSH", "no-such-vtysh")
    with pytest.raises(LabError) as info:
        preflight()
    message = str(info.value)
    assert "root" in message
    assert "/nonexistent/zebra (apt-get install frr)" in message
    assert "vtysh" in message
