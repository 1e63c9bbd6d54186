"""Links: dispatches go to executors that serve the task, one executor id is one process."""

from __future__ import annotations

import uuid

import pytest

from tests.unit.scheduler.helpers import TOKEN, hello
from wheel.errors import Conflict
from wheel.model.http_tasks import HTTP_POOL, route_pool
from wheel.scheduler.links import Links


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


def test_an_unresponsive_executor_gets_nothing_until_it_speaks() -> None:
    links = Links()
    frozen = links.connect(hello("frozen"), TOKEN)
    alive = links.connect(hello("alive", instance_id="i2"), TOKEN)
    for link in (frozen, alive):
        links.grant(link, "default", 10)
    frozen.unresponsive = True  # a lease it held lapsed
    assert {links.take("default", "report") for _ in range(4)} == {alive}
    links.heard(frozen)
    assert frozen in {links.take("default", "report") for _ in range(4)}


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
