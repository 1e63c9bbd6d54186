"""What an acknowledged commit survives: a synchronous standby, or only the primary's disk.

wheel acknowledges a created job once Postgres has committed it. Whether that
commit outlives the primary machine is Postgres's setup: with a synchronous
standby (`synchronous_standby_names` set, `synchronous_commit` at least `on`)
the commit is on a second machine before it is acknowledged; without one, a
failover or a lost disk can take acknowledged jobs with it. Nodes read this
at start and periodically (`wheel.scheduler.durability`).
"""

from __future__ import annotations

from dataclasses import dataclass

from wheel.errors import StoreError
from wheel.store.pool import Pool
from wheel.store.queries import sql
from wheel.store.translate import translated

_LOCAL_ONLY = ("off", "local")
"""`synchronous_commit` values with which a commit waits for no standby."""


@dataclass(frozen=True, slots=True)
class Durability:
    synchronous_commit: str
    standby_names: str
    """`synchronous_standby_names`: empty when commits wait for no standby."""
    synchronous_standbys: int
    """Standbys connected now whose flush a commit waits for."""
    unseen_standbys: int
    """Standbys connected whose state this role may not read (it lacks pg_monitor)."""

    @property
    def problem(self) -> str | None:
        """Why an acknowledged commit may not survive the loss of the primary, or None."""
        if not self.standby_names.strip():
            return (
                "no synchronous standby (synchronous_standby_names is empty): an acknowledged "
                "job is lost if the Postgres primary's disk is lost"
            )
        if self.synchronous_commit in _LOCAL_ONLY:
            return (
                f"synchronous_commit is {self.synchronous_commit!r}: commits do not wait for "
                "the standby, so an acknowledged job can be lost with the primary's disk"
            )
        if self.synchronous_standbys == 0 and self.unseen_standbys == 0:
            return (
                f"no synchronous standby is connected (synchronous_standby_names is "
                f"{self.standby_names!r}): commits wait until one is"
            )
        return None


class DurabilityReader:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def read(self) -> Durability:
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(sql("durability"))
            row = await cursor.fetchone()
        if row is None:
            raise StoreError("the durability query returned no row")
        commit, names, synchronous, unseen = row
        return Durability(str(commit), str(names), int(synchronous), int(unseen))
