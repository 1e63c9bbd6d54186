"""The fake API's token and a job seeded in it, for the SDK's tests."""

from __future__ import annotations

import uuid

from tests.unit.client.fake_api import NOW, FakeApi
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.api.convert import policies_to, schedule_to
from wheel.client import cron
from wheel.model.jobs import Policies
from wheel.timestamps import to_timestamp

TOKEN = "whl_test_secret"


def seed_job(api: FakeApi, name: str = "nightly report") -> pb.Job:
    """A cron job in Europe/London stored in the fake, as the server would hold it."""
    ident = str(uuid.uuid4())
    job = pb.Job(
        id=ident,
        name=name,
        task_type="reports.nightly",
        payload=b'{"to": "ops"}',
        schedule=schedule_to(cron("30 1 * * *", "Europe/London")),
        policies=policies_to(Policies(max_attempts=5)),
        status=pb.JOB_STATUS_ACTIVE,
        version=3,
        created_at=to_timestamp(NOW),
        updated_at=to_timestamp(NOW),
    )
    api.jobs[ident] = job
    return job
