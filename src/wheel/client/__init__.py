"""The Python SDK: an asyncio client and the sync client that wraps it.

    import wheel

    with wheel.Client("127.0.0.1:7070", token="whl_...") as client:
        created = client.create_job("hello", "examples.hello", wheel.now())

- `aio.AsyncClient`: the one implementation of every call (`wheel.AsyncClient`);
- `sync.Client`: the same methods, blocking (`wheel.Client`);
- `schedules`: `now()`, `at(instant)`, `cron(expression, zone, ...)`, `every(interval, ...)`;
- `types`: what calls return (frozen dataclasses, the model's enums);
- `transport`: endpoints, token, TLS, failover and retry;
- `messages`: protobuf answers as `types`;
- `verify_webhook`: a receiver's check of a notification's Wheel-Signature;
- `verify_http_task`: an HTTP task endpoint's check of a request (signature, run, age).
"""

from wheel.api.signature import verify as verify_webhook
from wheel.api.signature import verify_http_task
from wheel.client.aio import AsyncClient
from wheel.client.schedules import at, cron, every, now
from wheel.client.sync import Client
from wheel.client.types import (
    Attempt,
    Backfill,
    Calendar,
    ClosedDay,
    CreatedJob,
    Execution,
    ExecutorInfo,
    Explanation,
    Job,
    NewJob,
    NextRun,
    Node,
    NodeState,
    Page,
    Partition,
    Roster,
    RunsAround,
    Step,
    Verdict,
    Webhook,
)

__all__ = [
    "AsyncClient",
    "Attempt",
    "Backfill",
    "Calendar",
    "Client",
    "ClosedDay",
    "CreatedJob",
    "Execution",
    "ExecutorInfo",
    "Explanation",
    "Job",
    "NewJob",
    "NextRun",
    "Node",
    "NodeState",
    "Page",
    "Partition",
    "Roster",
    "RunsAround",
    "Step",
    "Verdict",
    "Webhook",
    "at",
    "cron",
    "every",
    "now",
    "verify_http_task",
    "verify_webhook",
]
