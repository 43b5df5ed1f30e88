"""The discrete-event engine: time order, FIFO among equal times, cancellation, ``until`` and
``max_events``, no scheduling in the past, a seeded generator."""

from __future__ import annotations

import math

import pytest

from clusterwright.errors import InputError
from clusterwright.sim.engine import Engine, check_seed


def test_events_run_in_time_order_whatever_order_they_were_scheduled() -> None:
    eng = Engine()
    seen: list[tuple[float, str]] = []
    for t, tag in [(3.0, "c"), (1.0, "a"), (2.0, "b"), (0.5, "first")]:
        eng.at(t, lambda tag=tag: seen.append((eng.now, tag)))
    eng.run()
    assert seen == [(0.5, "first"), (1.0, "a"), (2.0, "b"), (3.0, "c")]
    assert eng.now == 3.0
    assert eng.events == 4


def test_events_at_the_same_time_run_in_the_order_they_were_scheduled() -> None:
    eng = Engine()
    seen: list[int] = []
    for i in range(20):
        eng.at(1.0, seen.append, i)
    eng.run()
    assert seen == list(range(20))


def test_an_event_scheduled_for_now_from_a_callback_runs_after_the_ones_already_queued() -> None:
    eng = Engine()
    seen: list[str] = []

    def first() -> None:
        seen.append("first")
        eng.after(0.0, seen.append, "spawned")

    eng.at(1.0, first)
    eng.at(1.0, seen.append, "second")
    eng.run()
    assert seen == ["first", "second", "spawned"]


def test_after_is_relative_to_the_current_time() -> None:
    eng = Engine()
    times: list[float] = []
    eng.at(2.0, lambda: eng.after(0.25, lambda: times.append(eng.now)))
    eng.run()
    assert times == [2.25]


def test_a_cancelled_event_does_not_run_and_is_not_counted() -> None:
    eng = Engine()
    seen: list[str] = []
    keep = eng.at(1.0, seen.append, "keep")
    drop = eng.at(0.5, seen.append, "drop")
    assert eng.pending() == 2
    drop.cancel()
    assert eng.pending() == 1
    eng.run()
    assert seen == ["keep"]
    assert eng.events == 1
    assert not keep.cancelled


def test_a_callback_can_cancel_a_later_event() -> None:
    eng = Engine()
    seen: list[str] = []
    later = eng.at(2.0, seen.append, "later")
    eng.at(1.0, later.cancel)
    eng.run()
    assert seen == []


def test_run_until_stops_before_later_events_and_resumes() -> None:
    eng = Engine()
    seen: list[float] = []
    for t in (1.0, 2.0, 3.0):
        eng.at(t, lambda: seen.append(eng.now))
    eng.run(until=2.0)  # an event exactly at ``until`` runs
    assert seen == [1.0, 2.0]
    assert eng.pending() == 1
    eng.run(until=2.5)
    assert seen == [1.0, 2.0]
    assert eng.now == 2.5
    eng.run()
    assert seen == [1.0, 2.0, 3.0]


def test_max_events_stops_after_that_many_callbacks() -> None:
    eng = Engine()
    seen: list[int] = []
    for i in range(5):
        eng.at(float(i), seen.append, i)
    eng.run(max_events=2)
    assert seen == [0, 1]
    eng.run()
    assert seen == [0, 1, 2, 3, 4]


def test_stop_ends_the_run_after_the_current_callback_and_a_later_run_resumes() -> None:
    eng = Engine()
    seen: list[int] = []

    def note(i: int) -> None:
        seen.append(i)
        if i == 1:
            eng.stop()

    for i in range(4):
        eng.at(float(i), note, i)
    eng.run()
    assert seen == [0, 1] and eng.stopped and eng.pending() == 2
    eng.run()
    assert seen == [0, 1, 2, 3] and not eng.stopped


def test_scheduling_in_the_past_raises() -> None:
    eng = Engine()
    eng.at(5.0, lambda: None)
    eng.run()
    with pytest.raises(ValueError, match="before now"):
        eng.at(4.0, lambda: None)


def test_a_negative_delay_runs_now_not_in_the_past() -> None:
    eng = Engine()
    times: list[float] = []
    eng.at(1.0, lambda: eng.after(-1.0, lambda: times.append(eng.now)))
    eng.run()
    assert times == [1.0]


def test_a_nan_time_is_refused() -> None:
    eng = Engine()
    with pytest.raises(ValueError):
        eng.at(math.nan, lambda: None)


def test_the_generator_is_seeded_and_reproducible() -> None:
    a, b, c = Engine(seed=7), Engine(seed=7), Engine(seed=8)
    xa, xb, xc = a.rng.random(5), b.rng.random(5), c.rng.random(5)
    assert (xa == xb).all()
    assert not (xa == xc).all()


@pytest.mark.parametrize("seed", [-1, 2**32, 2**64, True, 1.5])
def test_a_seed_outside_32_bits_is_an_input_error(seed: object) -> None:
    # numpy refused negative seeds with a bare ValueError (a traceback on the CLI).
    with pytest.raises(InputError, match="seed: must be an integer between 0 and") as info:
        Engine(seed)  # type: ignore[arg-type]
    assert info.value.field == "seed"


def test_the_largest_seed_runs() -> None:
    check_seed(2**32 - 1)
    Engine(2**32 - 1)
