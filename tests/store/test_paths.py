"""Where the database lives by default."""

from __future__ import annotations

from pathlib import Path

from clusterwright.store import DEFAULT_DB, default_db_path


def test_env_var_wins() -> None:
    env = {"CLUSTERWRIGHT_DB": "/x/my.db", "XDG_DATA_HOME": "/data"}
    assert default_db_path(env) == Path("/x/my.db")


def test_xdg_data_home() -> None:
    assert default_db_path({"XDG_DATA_HOME": "/data"}) == Path(
        "/data/clusterwright/clusterwright.db"
    )


def test_relative_xdg_is_ignored_and_home_default_used() -> None:
    expected = Path.home() / ".local/share/clusterwright/clusterwright.db"
    assert default_db_path({"XDG_DATA_HOME": "rel/dir"}) == expected
    assert default_db_path({}) == expected


def test_default_db_is_a_path() -> None:
    assert isinstance(DEFAULT_DB, Path) and DEFAULT_DB.name.endswith(".db")
