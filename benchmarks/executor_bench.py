"""The executor's own cost per run: a spike held until its instant, no network, no node.

    PYTHONPATH=. .venv/bin/python benchmarks/executor_bench.py [--runs 20000]
        [--concurrency 512] [--no-gc-governor]

Feeds `runs` dispatches (in messages of 1,000, as a node sends them) into the
executor's real link delivery, `Executions`, `Outbox` and `Stream`, all due at
one instant half a second ahead; a no-op async handler runs each; a stand-in
for the link's writer serialises what the stream owes and acknowledges every
result, as a node would. Prints CPU µs per run for receiving (protobuf to a
held run) and for running (start, handler, report, serialised, acknowledged),
and how long after the instant the last run started with the whole process to
itself: the executor's floor for a spike, before any node or database work.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta

from wheel import eventloop
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.executor.connection import Identity, NodeLink, Stream
from wheel.executor.context import TaskContext
from wheel.executor.executions import Executions
from wheel.executor.outbox import Outbox
from wheel.executor.routing import Router
from wheel.executor.tasks import TaskRegistry
from wheel.executor.threads import HandlerThreads
from wheel.model.ids import ExecutionKey, JobId
from wheel.timestamps import to_timestamp
from wheel.timingwheel import GcGovernor, GcPolicy

MESSAGE = 1000


def dispatches(runs: int, at: datetime) -> list[pb.SchedulerMessage]:
    deadline = to_timestamp(at + timedelta(minutes=5))
    start = to_timestamp(at)
    out = []
    for first in range(0, runs, MESSAGE):
        batch = pb.Dispatches()
        for _ in range(min(MESSAGE, runs - first)):
            job = JobId(uuid.uuid4())
            batch.dispatches.add(
                execution_id=ExecutionKey(job, at).id, job_id=str(job), task_type="noop",
                pool="default", attempt=1, fence=1, scheduled_for=start, start_at=start,
                deadline=deadline,
            )  # fmt: skip
        out.append(pb.SchedulerMessage(dispatches=batch))
    return out


async def main(args: argparse.Namespace) -> None:
    registry = TaskRegistry()
    started: list[float] = []

    async def noop(ctx: TaskContext) -> None:
        started.append(time.time())

    registry.register("noop", noop)
    router = Router()
    outbox = Outbox(router)
    governor = GcGovernor(GcPolicy()) if args.gc_governor else None
    executions = Executions(
        registry, {"default": args.concurrency}, threads=HandlerThreads(4), router=router,
        outbox=outbox, hold=args.runs, governor=governor,
    )  # fmt: skip
    identity = Identity("bench", ("default",), ("noop",), args.concurrency)
    link = NodeLink("node", "127.0.0.1:1", identity, executions, backoff_min_s=1,
                    backoff_max_s=1)  # fmt: skip
    stream = Stream("node", "node", 10.0)
    executions.stream_up(stream)
    if governor is not None:
        governor.start()
    done = asyncio.Event()
    acknowledged = 0

    async def node_side() -> None:
        """The link's writer, and a node acknowledging every result it reads."""
        nonlocal acknowledged
        while (messages := await stream.next_messages()) is not None:
            acks = pb.Acknowledgements()
            for message in messages:
                message.SerializeToString()
                kind = message.WhichOneof("body")
                results = (
                    [message.result] if kind == "result"
                    else message.results.results if kind == "results" else []
                )  # fmt: skip
                for result in results:
                    acks.accepted.add(execution_id=result.execution_id, fence=result.fence)
            if acks.accepted:
                acknowledged += len(acks.accepted)
                link._deliver(stream, pb.SchedulerMessage(acknowledgements=acks))
                if acknowledged == args.runs:
                    done.set()

    at = datetime.now(UTC) + timedelta(seconds=args.lead_s + args.runs / 20_000)
    messages = [pb.SchedulerMessage.FromString(m.SerializeToString())
                for m in dispatches(args.runs, at)]  # fmt: skip
    writer = asyncio.create_task(node_side())
    cpu = time.process_time()
    for message in messages:
        link._deliver(stream, message)
    receive_cpu = time.process_time() - cpu
    if datetime.now(UTC) >= at:
        raise SystemExit("receiving took past the instant: lower --runs")
    await asyncio.sleep(max(0.0, (at - datetime.now(UTC)).total_seconds() - 0.05))
    cpu = time.process_time()
    await asyncio.wait_for(done.wait(), 600)
    run_cpu = time.process_time() - cpu
    stream.close()
    await writer
    if governor is not None:
        governor.stop()
    last_start_ms = (max(started) - at.timestamp()) * 1000
    print("| executor, one process | runs | receive µs/run | run µs/run | last start after T |")
    print("|---|---:|---:|---:|---:|")
    print(
        f"| concurrency {args.concurrency}, GC governor {'on' if governor else 'off'} "
        f"| {args.runs:,} | {receive_cpu / args.runs * 1e6:.1f} | {run_cpu / args.runs * 1e6:.1f} "
        f"| {last_start_ms:.0f} ms |"
    )


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=512)
    parser.add_argument("--lead-s", type=float, default=0.5, help="the instant, from now")
    parser.add_argument("--no-gc-governor", dest="gc_governor", action="store_false")
    return parser.parse_args()


if __name__ == "__main__":
    eventloop.run(main(parse()))
