"""wheel: a distributed job scheduler.

Users register work to run now, at an instant, or on a cron schedule in a time
zone; scheduler nodes coordinated by etcd fire every occurrence from an
in-memory timing wheel and stream it to executors; Postgres is the source of
truth.

The distribution is `wheel-scheduler`; the import name `wheel` is shared with
PyPA's `wheel` package, so wheel-scheduler always lives in its own virtual
environment. `__distribution__` tells the two apart.
"""

__distribution__ = "wheel-scheduler"
__version__ = "0.1.0"

__all__ = ["__distribution__", "__version__"]
