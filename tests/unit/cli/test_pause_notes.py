"""`wheel jobs pause --note` and every place the CLI shows a paused job: who, how long
ago and why."""

from __future__ import annotations

import json

from tests.unit.cli.invoking import ok, run
from tests.unit.client.fake_api import PAUSED_BY, FakeApi
from tests.unit.client.helpers import seed_job
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.cli.jobs import jobs

SAID = f"paused by {PAUSED_BY} 2 h ago: vendor outage, INC-123"


def test_pause_sends_the_note_and_every_view_says_who_when_and_why(
    address: str, api: FakeApi
) -> None:
    ident = seed_job(api, "nightly").id
    paused = ok(run(jobs, address, "pause", "nightly", "--note", "vendor outage, INC-123"))
    assert api.called("PauseJob")[0].request.note == "vendor outage, INC-123"
    assert "job paused" in paused
    assert SAID in paused
    assert SAID in ok(run(jobs, address, "get", "nightly"))
    assert SAID in ok(run(jobs, address, "list"))
    document = json.loads(ok(run(jobs, address, "get", ident, "--output", "json")))
    assert document["pause"]["note"] == "vendor outage, INC-123"
    assert document["pause"]["by"] == PAUSED_BY
    resumed = ok(run(jobs, address, "resume", ident))
    assert "paused by" not in resumed
    assert "paused by" not in ok(run(jobs, address, "list"))


def test_a_pause_without_a_note_says_who_and_when(address: str, api: FakeApi) -> None:
    ident = seed_job(api).id
    ok(run(jobs, address, "pause", ident))
    assert api.called("PauseJob")[0].request.note == ""
    assert f"paused by {PAUSED_BY} 2 h ago  cron" in ok(run(jobs, address, "list"))


def test_a_note_of_two_lines_is_refused_naming_the_field(address: str, api: FakeApi) -> None:
    ident = seed_job(api).id
    result = run(jobs, address, "pause", ident, "--note", "two\nlines")
    assert result.exit_code != 0
    assert "note: must not contain control characters" in result.output
    assert api.jobs[ident].status == pb.JOB_STATUS_ACTIVE, "nothing was written"
