"""Schedules: cron in IANA zones with explicit DST rules, smearing, previews (pure).

    plan = compile_schedule(schedule, job_id, now=now)   # validates
    plan.runs(start, end)                                # occurrences in a window
    preview(plan, after=now, count=5)                    # for people
    preview_around(plan, change.at, before=4, after=4)   # both sides of a DST change

See docs/schedules.md for the DST rule and the per-job overrides.
"""

from wheel.schedule.dst import DstRule, Occurrence
from wheel.schedule.plan import SchedulePlan, compile_schedule, smear_offset
from wheel.schedule.preview import AroundRuns, PreviewRun, preview, preview_around
from wheel.schedule.zones import Transition, next_transition

__all__ = [
    "AroundRuns",
    "DstRule",
    "Occurrence",
    "PreviewRun",
    "SchedulePlan",
    "Transition",
    "compile_schedule",
    "next_transition",
    "preview",
    "preview_around",
    "smear_offset",
]
