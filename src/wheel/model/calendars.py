"""A tenant's stored business calendar: its definition (wheel.schedule.calendars) and the
identity and bookkeeping the store adds."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import NewType

from wheel.model.ids import TenantId
from wheel.schedule.calendars import Calendar

CalendarId = NewType("CalendarId", uuid.UUID)


def new_calendar_id() -> CalendarId:
    return CalendarId(uuid.uuid4())


@dataclass(frozen=True, slots=True)
class StoredCalendar:
    """A calendar as the store keeps it; `calendar.version` is its stored version."""

    id: CalendarId
    tenant_id: TenantId
    calendar: Calendar
    created_at: datetime
    updated_at: datetime

    @property
    def name(self) -> str:
        return self.calendar.name

    @property
    def version(self) -> int:
        return self.calendar.version
