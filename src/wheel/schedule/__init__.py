"""Schedules: cron in IANA zones with explicit DST rules, smearing, previews (pure).

    plan = compile_schedule(schedule, job_id, now=now)   # validates
    plan.runs(start, end)                                # occurrences in a window
    preview(plan, after=now, count=5)                    # for people

See docs/schedules.md for the DST rule and the per-job overrides.
"""

from wheel.schedule.dst import DstRule, Occurrence
from wheel.schedule.plan import SchedulePlan, compile_schedule, smear_offset
from wheel.schedule.preview import PreviewRun, preview

__all__ = [
    "DstRule",
    "Occurrence",
    "PreviewRun",
    "SchedulePlan",
    "compile_schedule",
    "preview",
    "smear_offset",
]
