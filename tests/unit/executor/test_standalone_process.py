"""`wheel executor` run as its own process: it serves a node, and SIGTERM drains it,
revokes its registration and exits 0."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import textwrap
from pathlib import Path

from tests.unit.executor.fake_node import dispatch
from tests.unit.executor.helpers import Cluster
from wheel._proto.wheel.v1 import executor_pb2 as pb


async def test_runs_standalone_and_drains_on_sigterm(cluster: Cluster, tmp_path: Path) -> None:
    (tmp_path / "cli_tasks_module.py").write_text(
        textwrap.dedent("""
            import wheel

            @wheel.task("hello")
            def hello(ctx: wheel.TaskContext) -> None:
                assert ctx.payload == b"hi"
        """)
    )
    node = await cluster.add_node("n1", auto_ack=True)
    args = [
        "--executor-id", "cli-ex", "--etcd", cluster.endpoint, "--cluster", cluster.layout.cluster,
        "--tasks", "cli_tasks_module", "--pool", "default=3", "--drain-timeout", "5",
    ]  # fmt: skip
    program = "from wheel.cli.executor import executor; executor()"
    log_path = tmp_path / "executor.log"
    with log_path.open("w") as log_file:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", program, *args, cwd=tmp_path, stderr=log_file
        )
    try:
        stream = await node.opened(timeout_s=30)
        assert (stream.hello.executor_id, stream.hello.capacity) == ("cli-ex", 3)
        assert list(stream.hello.task_types) == ["hello"]
        sent = stream.dispatch(dispatch("hello", payload=b"hi"))
        result = await stream.result(sent.execution_id)
        assert (result.outcome, result.error) == (pb.Result.OUTCOME_SUCCEEDED, "")
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert await cluster.etcd.get(f"{cluster.layout.executors}cli-ex") is None
    events = [json.loads(line)["event"] for line in log_path.read_text().splitlines()]
    assert events[-1] == "executor.stopped", events
