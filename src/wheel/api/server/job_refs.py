"""A job named in a request by its id or by its name, resolved within the caller's tenant.

A name is looked up among the tenant's jobs that are not deleted (names are
unique there); another tenant's job of that name is not found, like its id.
"""

from __future__ import annotations

from wheel.api import convert
from wheel.errors import NotFound
from wheel.model.ids import JobId, TenantId
from wheel.store.jobs import Jobs


async def resolve(jobs: Jobs, tenant: TenantId, text: str, field: str = "id") -> JobId:
    """The id of the job `text` names (NotFound when the tenant has none by that name)."""
    ref = convert.job_ref(text, field)
    if not isinstance(ref, str):
        return ref
    job = await jobs.named(tenant, ref)
    if job is None:
        raise NotFound("job", repr(ref))
    return job.id
