"""What the cluster serves, as the nodes publish it: HTTP tasks are the nodes' own runners'."""

from __future__ import annotations

from wheel.api.server.served import ExecutorOnNode, Served


def executor(executor_id: str, task_types: tuple[str, ...], **kw: object) -> ExecutorOnNode:
    return ExecutorOnNode(
        node_id="node-a", executor_id=executor_id, pools=kw.pop("pools", ("default",)),  # type: ignore[arg-type]
        task_types=task_types, capacity=4, credit={}, since="", **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def test_http_tasks_are_served_by_a_nodes_runner_and_by_no_executor() -> None:
    task = "wheel.http:hooks.example.com"
    anything = Served((executor("tool", ()),))
    assert anything.serves("default", "report")
    assert not anything.serves("default", task)
    assert anything.unserved("default", task) is not None
    both = Served((executor("tool", ()), executor("http@node-a", ("wheel.http:*",),
                                                  pools=("*",), http_runner=True)))  # fmt: skip
    assert both.serves("batch", task)
    assert both.unserved("batch", task) is None
    assert both.serves("default", "report")
    assert not both.executors[1].serves("default", "report")
