"""Jobs for node tests: a tenant, a job with policies, a one-off a few seconds on, and a
run's status; a node's metrics, scraped."""

from __future__ import annotations

import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from wheel.api.server.registration import register_job
from wheel.model.executions import ExecutionStatus
from wheel.model.ids import ExecutionKey, new_job_id
from wheel.model.jobs import Job, JobSpec, Policies, Schedule, ScheduleKind
from wheel.model.tenants import Tenant
from wheel.store import Store

PARTITIONS = 8


async def tenant(store: Store) -> Tenant:
    return await store.tenants.create(f"t-{new_job_id().hex[:8]}")


async def create_job(store: Store, owner: Tenant, schedule: Schedule, **policies: Any) -> Job:
    spec = JobSpec(
        name=f"test job {uuid.uuid4().hex[:8]}",  # names are unique per tenant
        task_type=policies.pop("task_type", "work"),
        schedule=schedule,
        policies=Policies(**policies),
    )
    return (await register_job(store, owner.id, spec, partitions=PARTITIONS)).job


def at(seconds: float) -> Schedule:
    instant = datetime.now(UTC) + timedelta(seconds=seconds)
    return Schedule(kind=ScheduleKind.AT, at=instant.replace(microsecond=0))


async def status(store: Store, job: Job, when: datetime) -> ExecutionStatus:
    return (await store.executions.get(job.tenant_id, ExecutionKey(job.id, when))).status


def scrape(address: str) -> dict[str, float]:
    """Every sample at a node's /metrics, by name{label=value,...} (blocking: use a thread)."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        text = response.read().decode()
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}"] = sample.value
    return samples
