"""A robustness run's plan, all of it drawn from one seed: the faults (what, when, for how
long) and the jobs (when each is created, its schedule, task and policies).

The same seed gives the same plan; the processes' timing is the machine's, so a replay
repeats the schedule, not every interleaving.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

NODES = ("node-0", "node-1")
EXECUTORS = ("executor-0", "executor-1")
ACTIONS = {
    "node": ("kill", "pause"),
    "executor": ("kill", "pause"),
    "etcd": ("restart",),
    "postgres": ("restart",),
}


@dataclass(frozen=True)
class Fault:
    at_s: float
    """Seconds after the run's start."""
    target: str
    """A node's or executor's id, "etcd" or "postgres"."""
    action: str
    """kill (SIGKILL, started again after `for_s`), pause (SIGSTOP, SIGCONT after
    `for_s`), restart (etcd killed, Postgres crashed; started again after `for_s`)."""
    for_s: float

    def __str__(self) -> str:
        return f"{self.at_s:6.2f} s  {self.action:<7} {self.target:<10} for {self.for_s:.2f} s"


@dataclass(frozen=True)
class NewJob:
    at_s: float
    """When the client creates it, in seconds after the run's start."""
    kind: str
    """"at": one run, `due_in_s` after the create; "cron": every `every_s` seconds from
    the create until the run's end."""
    task: str
    hold_s: float
    idempotent: bool
    overlap: str
    misfire: str
    misfire_grace_s: float
    due_in_s: float = 0.0
    every_s: int = 0


@dataclass(frozen=True)
class Plan:
    seed: int
    duration_s: float
    faults: tuple[Fault, ...]
    jobs: tuple[NewJob, ...]

    def describe(self) -> str:
        lines = [f"robustness seed {self.seed}: {self.duration_s:.0f} s, {len(self.jobs)} jobs,"
                 f" replay with WHEEL_ROBUSTNESS_SEED={self.seed}"]  # fmt: skip
        return "\n".join([*lines, *(f"  {fault}" for fault in self.faults)])


def plan(seed: int, duration_s: float) -> Plan:
    rng = random.Random(seed)
    faults = []
    # One fault at a time, a short calm between: each has its own window of recovery.
    clock = rng.uniform(1.0, 2.5)
    while True:
        kind = rng.choice(("node", "node", "executor", "executor", "etcd", "postgres"))
        target = {"node": rng.choice(NODES), "executor": rng.choice(EXECUTORS)}.get(kind, kind)
        action = rng.choice(ACTIONS[kind])
        length = rng.uniform(0.5, 4.0) if kind != "postgres" else rng.uniform(0.5, 5.0)
        if clock + length > duration_s - 1:
            break
        faults.append(Fault(round(clock, 2), target, action, round(length, 2)))
        clock += length + rng.uniform(0.5, 2.5)
    jobs = []
    for _ in range(int(duration_s)):
        at_s = round(rng.uniform(0, duration_s - 2), 2)
        if rng.random() < 0.2:
            jobs.append(NewJob(at_s, "cron", "work", hold_s=round(rng.uniform(0.5, 3.5), 2),
                               idempotent=rng.random() < 0.7, overlap="skip",
                               misfire=rng.choice(("skip", "fire_once")),
                               misfire_grace_s=rng.choice((1.0, 2.0, 5.0)),
                               every_s=rng.choice((1, 2, 3))))  # fmt: skip
        else:
            jobs.append(NewJob(at_s, "at", rng.choice(("work", "work", "flaky")),
                               hold_s=round(rng.uniform(0.02, 1.5), 2),
                               idempotent=rng.random() < 0.7, overlap="skip",
                               misfire=rng.choice(("skip", "fire_once")),
                               misfire_grace_s=rng.choice((2.0, 10.0, 60.0)),
                               due_in_s=round(rng.uniform(0, 3), 2)))  # fmt: skip
    return Plan(seed, duration_s, tuple(faults), tuple(sorted(jobs, key=lambda j: j.at_s)))
