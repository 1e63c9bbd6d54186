"""`wheel jobs list` and `wheel executions list` fit the terminal: 80 columns by default.

Headers are never cut; the name comes first; a long cell (a schedule, an error)
folds onto continuation lines at spaces; the job's id only with --wide; a run's
id, which `explain` needs, whole under its row when the row has no room for it.
"""

from __future__ import annotations

from click.testing import CliRunner

from tests.unit.client.fake_api import NOW, FakeApi
from tests.unit.client.helpers import TOKEN, seed_job
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.cli.jobs import executions, jobs
from wheel.cli.table import Col, render

RUN_HEADERS = ["scheduled", "job", "status", "try", "late", "took", "detail"]


def listing(group: object, address: str, *args: str, columns: int = 80) -> list[str]:
    env = {"COLUMNS": str(columns), "WHEEL_ENDPOINTS": "", "WHEEL_TOKEN": ""}
    result = CliRunner().invoke(group, ["list", *args, "--endpoint", address, "--token", TOKEN],
                                env=env)  # type: ignore[arg-type]  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_jobs_list_fits_80_columns_name_first_schedule_folded(address: str, api: FakeApi) -> None:
    job = seed_job(api, "london-every-minute")
    seed_job(api, "nightly-report-for-the-finance-team")
    lines = listing(jobs, address)
    assert max(map(len, lines)) <= 80, "\n".join(lines)
    assert lines[0].split() == ["name", "task", "status", "schedule", "last", "run", "next",
                                "run"]  # fmt: skip
    assert lines[2].startswith("london-every-")
    assert job.id not in "\n".join(lines), "the id is shown on request (--wide)"
    text = "\n".join(lines)
    # Folded at spaces, several words a line: not one token per line, nothing cut.
    assert "in Europe/London" in text
    assert "'30 1 * * *'" in text
    assert "…" not in text
    assert "nightly-report-" in text, "a name longer than its column splits at a hyphen"


def test_jobs_list_wide_puts_the_id_last_on_one_line(address: str, api: FakeApi) -> None:
    job = seed_job(api, "london-every-minute")
    lines = listing(jobs, address, "--wide")
    assert lines[0].split()[-2:] == ["version", "id"]
    (row,) = [line for line in lines if line.startswith("london-every-minute")]
    assert row.endswith(job.id)
    assert "cron '30 1 * * *' in Europe/London" in row
    assert len(lines) == 3


def test_executions_list_fits_80_columns_with_the_id_whole(address: str, api: FakeApi) -> None:
    ident = seed_job(api, "london-every-minute").id
    error = "OSError: [Errno 111] connection refused by reports.example.com port 443 (https)"
    dead = api.add_execution(ident, NOW, pb.EXECUTION_STATUS_DEAD, attempt=3, error=error)
    lines = listing(executions, address)
    assert max(map(len, lines)) <= 80, "\n".join(lines)
    assert lines[0].split() == RUN_HEADERS
    assert f"  id {dead.id}" in lines, "the id whole, under its row"
    words = " ".join(lines).split()
    for word in error.split():
        assert word in words, "folded at spaces, no word cut"
    assert "london-every-minute" in words


def test_a_wide_terminal_keeps_each_run_on_one_line(address: str, api: FakeApi) -> None:
    ident = seed_job(api, "london-every-minute").id
    dead = api.add_execution(ident, NOW, pb.EXECUTION_STATUS_DEAD, attempt=1, error="boom")
    lines = listing(executions, address, columns=200)
    assert lines[0].split() == [*RUN_HEADERS, "id"]
    (row,) = [line for line in lines if dead.id in line]
    assert row.startswith("2027-03-27 12:00:00Z")
    assert row.endswith(dead.id)


def test_render_folds_the_widest_folding_column_first_and_never_cuts_a_header() -> None:
    columns = [Col("name", fold=True), Col("status"), Col("schedule", fold=True)]
    rows = [["a-rather-long-job-name", "active", "cron '*/5 * * * *' in America/Argentina/Cordoba"]]
    lines = render(columns, rows, width=60)
    assert max(map(len, lines)) <= 60
    assert lines[0].split() == ["name", "status", "schedule"]
    assert [line.split("  ")[0] for line in lines[2:]] == ["a-rather-long-job-name"] + [""] * (
        len(lines) - 3
    )
    assert render(columns, rows, width=None)[2].endswith("America/Argentina/Cordoba")


def test_render_splits_a_word_only_when_the_column_cannot_hold_it() -> None:
    lines = render([Col("error", fold=True)], [["x" * 30 + " short"]], width=14)
    assert lines[2:] == ["x" * 14, "x" * 14, "xx", "short"]
