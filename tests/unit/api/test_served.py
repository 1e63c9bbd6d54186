"""What the cluster serves, as the nodes publish it: HTTP tasks are the nodes' own runners'."""

from __future__ import annotations

from wheel.api.server.served import ExecutorOnNode, Served


def executor(executor_id: str, task_types: tuple[str, ...]) -> ExecutorOnNode:
    return ExecutorOnNode(
        node_id="node-a", executor_id=executor_id, pools=("default",), task_types=task_types,
        capacity=4, credit={}, since="",
    )  # fmt: skip


def test_http_tasks_are_served_by_the_nodes_runners_and_by_no_executor() -> None:
    task = "wheel.http:hooks.example.com"
    anything = Served((executor("tool", ()),))
    assert anything.serves("default", "report")
    assert not anything.serves("default", task)
    assert anything.unserved("default", task) is not None
    with_runners = Served((executor("tool", ()),), http_runners=frozenset({"node-a"}))
    assert with_runners.serves("batch", task)
    assert with_runners.serves("batch", task, "node-a")
    assert not with_runners.serves("batch", task, "node-b")
    assert with_runners.unserved("batch", task) is None
    assert with_runners.unserved("default", "report") is None
