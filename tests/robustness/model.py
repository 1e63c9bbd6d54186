"""The promises a robustness history is checked against.

Each rule reads the whole history (tests/robustness/history.py) and returns what broke
it, one sentence each; `check` runs them all. The rules:

- every acknowledged job's runs that were due by `end.due_until` end terminal;
- no fence starts twice (an executor never invokes a handler twice under one fence),
  and each start is of a claim of record: the store dispatched that fence of the run
  to that executor;
- no result with a superseded fence is accepted: a run has at most one success, under
  its latest fence, and every accepted result's fence was started by an executor; no
  result was accepted after a later fence of its run had started;
- a non-idempotent run starts at most once, plus once per retry a person asked for;
- each skip's reason held when it was decided: an overlap skip names a run of its job
  that was in flight at that instant by the store's committed changes, on the executor
  it names (and whose handler had started, if it says running); a
  misfire skip's stated wait is the time from the run's instant to the skip, and past
  the job's grace when it says so; "a later run fires instead" only when a later run
  of the job had come due.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from tests.robustness.history import Event, execution_id, instant, iso, run_key

TERMINAL = frozenset({"succeeded", "dead", "skipped", "needs_review", "cancelled"})
IN_FLIGHT = frozenset({"dispatched", "running"})
RESULTS = frozenset({"succeeded", "failed"})
"""Attempt outcomes that are an executor's result (the others the scheduler decided)."""
SLACK = timedelta(milliseconds=250)
"""Between instants two processes read off one machine's clock around one decision."""

RunKey = tuple[str, datetime]


def _runs(history: Sequence[Event], kind: str) -> dict[RunKey, list[Event]]:
    found: dict[RunKey, list[Event]] = defaultdict(list)
    for event in history:
        if event["kind"] == kind:
            found[run_key(event)].append(event)
    return found


def _executions(history: Sequence[Event]) -> dict[RunKey, Event]:
    return {run_key(e): e for e in history if e["kind"] == "execution"}


def _jobs(history: Sequence[Event]) -> dict[str, Event]:
    return {str(e["job_id"]): e for e in history if e["kind"] == "create"}


def due_runs_terminal(history: Sequence[Event]) -> list[str]:
    [end] = [e for e in history if e["kind"] == "end"]
    due_until = instant(end["due_until"])
    executions = _executions(history)
    broken = []
    for job in _jobs(history).values():
        if not job["acked"]:
            continue
        for text in job["instants"]:
            due = instant(text)
            if due > due_until:
                continue
            run = executions.get((str(job["job_id"]), due))
            name = execution_id(str(job["job_id"]), due)
            if run is None:
                broken.append(f"run {name} was due and never made (lost)")
            elif run["status"] not in TERMINAL:
                broken.append(f"run {name} was due and is still {run['status']}")
    return broken


def no_fence_started_twice(history: Sequence[Event]) -> list[str]:
    starts: dict[tuple[RunKey, int], list[Event]] = defaultdict(list)
    for event in history:
        if event["kind"] == "start":
            starts[(run_key(event), int(event["fence"]))].append(event)
    return [
        f"run {execution_id(*key)} fence {fence} started {len(found)} times"
        f" (on {', '.join(str(s['executor']) for s in found)})"
        for (key, fence), found in starts.items()
        if len(found) > 1
    ]


def starts_are_claimed(history: Sequence[Event]) -> list[str]:
    claims = {(run_key(a), int(a["fence"])): a["executor"] for a in history
              if a["kind"] == "attempt"}  # fmt: skip
    for run in (e for e in history if e["kind"] == "execution" and int(e["fence"]) > 0):
        claims.setdefault((run_key(run), int(run["fence"])), run["executor"])
    broken = []
    for start in (e for e in history if e["kind"] == "start"):
        key, fence = run_key(start), int(start["fence"])
        name = execution_id(*key)
        if (key, fence) not in claims:
            broken.append(f"run {name} fence {fence} started on {start['executor']}, and the"
                          " store has no claim of that fence")  # fmt: skip
        elif claims[(key, fence)] != start["executor"]:
            broken.append(f"run {name} fence {fence} started on {start['executor']}; the"
                          f" store dispatched it to {claims[(key, fence)]}")  # fmt: skip
    return broken


def no_superseded_result_accepted(history: Sequence[Event]) -> list[str]:
    executions = _executions(history)
    started = {(run_key(e), int(e["fence"])) for e in history if e["kind"] == "start"}
    starts = _runs(history, "start")
    broken = []
    for key, attempts in _runs(history, "attempt").items():
        name = execution_id(*key)
        fences = [int(a["fence"]) for a in attempts]
        successes = [a for a in attempts if a["outcome"] == "succeeded"]
        if len(successes) > 1:
            broken.append(f"run {name} succeeded {len(successes)} times (fences "
                          f"{sorted(int(a['fence']) for a in successes)})")  # fmt: skip
        run = executions.get(key)
        for success in successes:
            if int(success["fence"]) != max(fences):
                broken.append(f"run {name}: a success under fence {success['fence']} was"
                              f" accepted, superseded by fence {max(fences)}")  # fmt: skip
            if run is not None and int(success["fence"]) != int(run["fence"]):
                broken.append(f"run {name}: a success under fence {success['fence']} but the"
                              f" run's fence of record is {run['fence']}")  # fmt: skip
        for result in (a for a in attempts if a["outcome"] in RESULTS):
            fence = int(result["fence"])
            if (key, fence) not in started:
                broken.append(f"run {name}: a result under fence {fence} was accepted, and"
                              " no executor started that fence")  # fmt: skip
            accepted_at = instant(result["finished_at"])
            later = [s for s in starts.get(key, []) if int(s["fence"]) > fence
                     and instant(s["at"]) + SLACK < accepted_at]  # fmt: skip
            if later:
                broken.append(f"run {name}: the result of fence {fence} was accepted at"
                              f" {result['finished_at']}, after fence {later[0]['fence']}"
                              f" started at {later[0]['at']}")  # fmt: skip
    return broken


def non_idempotent_never_rerun(history: Sequence[Event]) -> list[str]:
    jobs = _jobs(history)
    executions = _executions(history)
    broken = []
    for key, starts in _runs(history, "start").items():
        job = jobs.get(key[0])
        if job is None or job["idempotent"]:
            continue
        run = executions.get(key)
        retried = int(run["retries"]) if run is not None else 0
        fences = sorted({int(s["fence"]) for s in starts})
        if len(fences) > 1 + retried:
            broken.append(f"non-idempotent run {execution_id(*key)} started under fences"
                          f" {fences} with {retried} retries asked for")  # fmt: skip
    return broken


_UNITS = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = r"((?:\d+(?:\.\d+)? (?:ms|s|min|h|d) ?)+)"
OVERLAP_RUNNING = re.compile(
    rf"overlap: run (\S+) was still running \(started {_DURATION} before, on (.+?)\)"
    r" \(policy skip\)$"
)
OVERLAP_HANDED = re.compile(
    rf"overlap: run (\S+) was in flight \(handed to (.+?) {_DURATION} before, due"
    rf" {_DURATION} before, no result yet\) \(policy skip\)$"
)
MISFIRE = re.compile(
    rf"misfire: (?:waited|came due) {_DURATION}.*"
    r"\(policy (?:skip|fire_once|fire_all)\)$"
)


def seconds(text: str) -> float:
    """A duration as wheel.durations.readable writes it, in seconds."""
    parts = text.split()
    return sum(float(n) * _UNITS[u] for n, u in zip(parts[::2], parts[1::2], strict=True))


def precision(text: str) -> float:
    """How far `readable` may have rounded the duration it wrote."""
    figure = seconds(text)
    if figure < 1:
        return 0.0005
    if figure < 59.95:
        return 0.05
    return 0.5 if figure < 3600 else 30.0


def _close(stated: str, actual: timedelta) -> bool:
    allowed = precision(stated) + SLACK.total_seconds()
    return abs(seconds(stated) - actual.total_seconds()) <= allowed


def _overlap(run: Event, at: datetime, history: Sequence[Event]) -> list[str]:
    reason = str(run["reason"])
    name = execution_id(*run_key(run))
    running, handed = OVERLAP_RUNNING.match(reason), OVERLAP_HANDED.match(reason)
    match = running or handed
    assert match is not None
    other = match.group(1)
    job_id = other.partition("@")[0]
    if job_id != str(run["job_id"]):
        return [f"run {name}: its overlap skip names a run of another job ({other})"]
    attempts = [a for a in history if a["kind"] == "attempt"
                and execution_id(*run_key(a)) == other]  # fmt: skip
    executions = [e for e in history if e["kind"] == "execution"
                  and execution_id(*run_key(e)) == other]  # fmt: skip
    # In flight at `at`: the store's last committed change of it before then handed it over
    # (a change committed within SLACK of the decision may or may not have been seen).
    changes = [(instant(t["committed"]), str(t["status"])) for t in history
               if t["kind"] == "transition" and execution_id(*run_key(t)) == other]  # fmt: skip
    before = [status for committed, status in sorted(changes) if committed <= at - SLACK]
    unsure = any(abs(committed - at) < SLACK for committed, _ in changes)
    if not unsure and (not before or before[-1] not in IN_FLIGHT):
        state = before[-1] if before else "not yet made"
        return [f"run {name} was skipped at {run['finished_at']} for overlap with {other},"
                f" which was not in flight then ({state})"]  # fmt: skip
    executor = running.group(3) if running else match.group(2)
    served = {a["executor"] for a in attempts} | {e.get("executor") for e in executions}
    if executor not in served:
        return [f"run {name}: its skip says {other} was on {executor}; it was dispatched to"
                f" {sorted(str(e) for e in served if e)} only"]  # fmt: skip
    if running:
        # The store marks a run started when the node records its first heartbeat, so the
        # stated start may come after the handler's: never before it, never after the skip.
        stated = running.group(2).strip()
        begun = at - timedelta(seconds=seconds(stated))
        allowed = timedelta(seconds=precision(stated)) + SLACK
        starts = [instant(s["at"]) for s in history if s["kind"] == "start"
                  and execution_id(*run_key(s)) == other]  # fmt: skip
        if not starts or min(starts) > at + SLACK or begun < min(starts) - allowed:
            seen = [iso(s) for s in sorted(starts)]
            return [f"run {name}: its skip says {other} started {stated} before"
                    f" {run['finished_at']}; the executors started it at {seen}"]  # fmt: skip
    return []


def _misfire(run: Event, at: datetime, job: Event | None, history: Sequence[Event]) -> list[str]:
    reason = str(run["reason"])
    name = execution_id(*run_key(run))
    waited = re.match(rf"misfire: (?:waited|came due) {_DURATION}", reason)
    assert waited is not None
    stated = waited.group(1).strip()
    actual = at - instant(run["fire_at"])
    broken = []
    if not _close(stated, actual):
        broken.append(f"run {name}: its misfire skip says {stated}; it came due"
                      f" {actual.total_seconds():.3f} s before the skip")  # fmt: skip
    if "a later run fires instead" in reason:
        job_id, due = run_key(run)
        later = [e for e in history if e["kind"] == "execution" and run_key(e)[0] == job_id
                 and due < run_key(e)[1] <= at + SLACK]  # fmt: skip
        if not later:
            broken.append(f"run {name}: its skip says a later run fires instead; none of its"
                          " job's later runs had come due by then")  # fmt: skip
    grace = re.search(rf"past its {_DURATION} grace", reason)
    if job is not None:
        policy = re.search(r"\(policy (\w+)\)$", reason)
        if policy is None or policy.group(1) != job["misfire"]:
            broken.append(f"run {name}: its skip names a policy its job ({job['misfire']})"
                          " does not have")  # fmt: skip
        if grace is not None:
            limit = float(job["misfire_grace_s"])
            if abs(seconds(grace.group(1).strip()) - limit) > precision(grace.group(1)):
                broken.append(f"run {name}: its skip names a {grace.group(1)} grace; its job"
                              f" has {limit} s")  # fmt: skip
            if actual.total_seconds() + SLACK.total_seconds() < limit:
                broken.append(f"run {name}: skipped as past its grace ({limit} s) after only"
                              f" {actual.total_seconds():.3f} s")  # fmt: skip
    return broken


def skip_reasons_held(history: Sequence[Event]) -> list[str]:
    jobs = _jobs(history)
    broken = []
    for run in (e for e in history if e["kind"] == "execution" and e["status"] == "skipped"):
        reason, name = str(run.get("reason") or ""), execution_id(*run_key(run))
        at = instant(run["finished_at"])
        if OVERLAP_RUNNING.match(reason) or OVERLAP_HANDED.match(reason):
            broken += _overlap(run, at, history)
        elif MISFIRE.match(reason):
            broken += _misfire(run, at, jobs.get(str(run["job_id"])), history)
        else:
            broken.append(f"run {name} was skipped for a reason the model does not know:"
                          f" {reason!r}")  # fmt: skip
    return broken


RULES: tuple[Callable[[Sequence[Event]], list[str]], ...] = (
    due_runs_terminal,
    no_fence_started_twice,
    starts_are_claimed,
    no_superseded_result_accepted,
    non_idempotent_never_rerun,
    skip_reasons_held,
)


def check(history: Sequence[Event]) -> list[str]:
    """Every rule's findings; empty when the history keeps every promise."""
    return [finding for rule in RULES for finding in rule(history)]
