"""Links: dispatches go to executors that serve the task, one executor id is one process."""

from __future__ import annotations

import uuid

import pytest

from tests.unit.scheduler.helpers import TOKEN, hello
from wheel.errors import Conflict
from wheel.model.http_tasks import HTTP_POOL, route_pool
from wheel.scheduler.links import Links
from wheel.scheduler.outgoing import Probe
from wheel.timingwheel import ManualClock


def test_dispatches_go_only_to_executors_with_the_task() -> None:
    links = Links()
    without = links.connect(hello("old", ("report",)), TOKEN)
    with_it = links.connect(hello("new", ("report", "resize")), TOKEN)
    links.grant(without, "default", 5)
    links.grant(with_it, "default", 1)
    assert links.take("default", "resize") is with_it
    assert links.take("default", "resize") is None, "the only capable executor has no credit"
    assert links.take("default", "report") is without


def test_one_executor_id_is_one_process() -> None:
    links = Links()
    first = links.connect(hello("ex", instance_id="a"), TOKEN)
    with pytest.raises(Conflict, match="another process"):
        links.connect(hello("ex", instance_id="b"), TOKEN)
    with pytest.raises(Conflict):
        links.connect(hello("ex", instance_id="a"), uuid.uuid4())  # another token
    assert first.open
    again = links.connect(hello("ex", instance_id="a"), TOKEN)  # the same process reconnecting
    assert not first.open
    assert again.open
    assert len(links) == 1


def test_a_held_back_executor_gets_nothing_until_it_speaks() -> None:
    links = Links()
    frozen = links.connect(hello("frozen"), TOKEN)
    alive = links.connect(hello("alive", instance_id="i2"), TOKEN)
    for link in (frozen, alive):
        links.grant(link, "default", 10)
    assert links.hold_back(frozen)  # a lease it held lapsed while it was silent
    assert not links.hold_back(frozen), "held back once"
    assert {links.take("default", "report") for _ in range(4)} == {alive}
    assert links.credit("default") == 6, "what can go now: the alive one's"
    assert links.credit("default", held_back=True) == 16
    assert [link.executor_id for link in links.holding("default")] == ["frozen", "alive"]
    links.heard(frozen)
    assert not frozen.held_back
    assert frozen in {links.take("default", "report") for _ in range(4)}


def test_a_held_back_executor_is_probed_at_once_and_every_interval_until_it_answers() -> None:
    clock = ManualClock()
    links = Links(clock=clock)
    link = links.connect(hello("frozen"), TOKEN)
    clock.advance(7_000)
    assert links.silent_for_s(link) == 7.0
    links.hold_back(link)
    assert link.outbox.get_nowait() == Probe(1), "asked at once"
    assert links.probe(every_s=2.0) == 0, "not again within the interval"
    clock.advance(2_000)
    assert links.probe(every_s=2.0) == 1
    assert link.outbox.get_nowait() == Probe(2)
    links.heard(link)  # its answer (any message)
    assert links.silent_for_s(link) == 0.0
    assert links.held_back() == []
    clock.advance(1_000)
    assert links.probe(every_s=2.0) == 0, "heard a second ago: nothing to ask"
    assert link.outbox.empty()
    clock.advance(1_500)
    assert links.probe(every_s=2.0) == 1, "silent for an interval: asked, as any link is"
    assert links.silent(longer_than_s=2.0) == [link]


def test_http_tasks_go_to_the_nodes_runner_which_is_no_executor() -> None:
    links = Links()
    anything = links.connect(hello("tool", ()), TOKEN)  # no task types: takes any other
    runner = links.connect(hello("http@node-a", ()), TOKEN, http_runner=True)
    links.grant(anything, "default", 5)
    links.grant(runner, HTTP_POOL, 2)
    task = "wheel.http:hooks.example.com"
    assert links.serves(HTTP_POOL, task)
    assert not anything.serves("default", task), "an executor never gets an HTTP task"
    assert not runner.serves("default", "report"), "the runner runs HTTP tasks only"
    assert links.credit("default") == 5, "the runner's credit is its own pool's"
    assert links.credit(HTTP_POOL) == 2
    assert links.take(HTTP_POOL, task) is runner
    assert links.take(HTTP_POOL, task) is runner
    assert links.take(HTTP_POOL, task) is None, "its credit is spent"
    assert links.take("default", "report") is anything
    assert list(links) == [anything], "iterating the links lists executors"
    assert len(links) == 1
    assert links.http_runner is runner
    links.disconnect(runner)
    assert links.http_runner is None
    assert not links.serves(HTTP_POOL, task)
    assert route_pool("default", task) == HTTP_POOL
    assert route_pool("default", "report") == "default"
