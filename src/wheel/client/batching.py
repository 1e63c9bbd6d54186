"""Creating many jobs: CreateJobs calls of `batch_size` jobs, `concurrency` at once.

A batch is all or none on the server. An invalid job raises InvalidArgument
naming it as `jobs[i].<field>`, `i` counted in the caller's whole input (the
server counts within its batch); batches already answered stay created and
the rest are not sent. Every job carries an id, so a batch is retried safely.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel.client import messages, requests
from wheel.client import types as t
from wheel.client.transport import Transport
from wheel.errors import InvalidArgument

MAX_CREATE_BATCH = 10_000
"""The server's MAX_CREATE_BATCH."""
MAX_BATCH_BYTES = 8 * 1024 * 1024
"""Half of what a node takes in one request."""


async def create_jobs(
    transport: Transport, jobs: Iterable[t.NewJob], *, batch_size: int, concurrency: int
) -> list[t.Job]:
    """The jobs created (or found by id), in the order given."""
    if batch_size < 1 or batch_size > MAX_CREATE_BATCH:
        raise InvalidArgument("batch_size", f"must be 1 to {MAX_CREATE_BATCH}")
    if concurrency < 1:
        raise InvalidArgument("concurrency", "must be at least 1")
    creates, payloads = [], []
    for index, new in enumerate(jobs):
        try:
            spec = new.as_spec()
        except InvalidArgument as exc:
            raise InvalidArgument(f"jobs[{index}].{exc.field}", exc.reason) from None
        creates.append(requests.create_job(spec, new.job_id))
        payloads.append(spec.payload)
    answers = await _send(transport, batches(creates, batch_size), concurrency)
    created = [messages.job(job) for answer in answers for job in answer.jobs]
    return [
        dataclasses.replace(job, payload=payload) if payload else job
        for job, payload in zip(created, payloads, strict=True)
    ]


def batches(
    creates: list[api.CreateJobRequest], size: int
) -> list[tuple[int, list[api.CreateJobRequest]]]:
    """The requests in batches of at most `size` jobs and `MAX_BATCH_BYTES`, with offsets."""
    found: list[tuple[int, list[api.CreateJobRequest]]] = []
    current: list[api.CreateJobRequest] = []
    start = current_bytes = 0
    for index, request in enumerate(creates):
        size_of = request.ByteSize() + 8
        if current and (len(current) == size or current_bytes + size_of > MAX_BATCH_BYTES):
            found.append((start, current))
            current, start, current_bytes = [], index, 0
        current.append(request)
        current_bytes += size_of
    if current:
        found.append((start, current))
    return found


def renumbered(exc: InvalidArgument, offset: int) -> InvalidArgument:
    """A batch's `jobs[i].field` error, with `i` counted in the whole input."""
    item = exc.in_batch()
    if item is None:
        return exc
    return InvalidArgument(f"jobs[{item[0] + offset}].{item[1]}", exc.reason)


async def _send(
    transport: Transport,
    found: list[tuple[int, list[api.CreateJobRequest]]],
    concurrency: int,
) -> list[api.CreateJobsResponse]:
    """Send the batches, `concurrency` at once; the answers in batch order."""
    answers: list[api.CreateJobsResponse | None] = [None] * len(found)
    gate = asyncio.Semaphore(concurrency)

    async def send(number: int, offset: int, batch: list[api.CreateJobRequest]) -> None:
        async with gate:
            request = api.CreateJobsRequest(jobs=batch)
            try:
                answer = await transport.call(lambda s: s.jobs.CreateJobs, request, retry=True)
            except InvalidArgument as exc:
                raise renumbered(exc, offset) from None
            answers[number] = answer

    tasks = [asyncio.create_task(send(n, offset, batch))
             for n, (offset, batch) in enumerate(found)]  # fmt: skip
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()  # one failed: the batches not yet sent are not
        await asyncio.gather(*tasks, return_exceptions=True)
    return [answer for answer in answers if answer is not None]
