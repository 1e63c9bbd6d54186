"""Which directories block Postgres's unprivileged user, judged from permission bits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wheel.errors import LocalServiceError
from wheel.local.service_user import ServiceUser, first_blocking_directory, require_reachable

# An account that owns nothing here and is in none of its groups.
STRANGER = ServiceUser("stranger", uid=os.getuid() + 12345, gid=os.getgid() + 12345)


def test_open_path_is_reachable(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    target = tmp_path / "a" / "b"
    target.mkdir(parents=True, mode=0o755)
    (tmp_path / "a").chmod(0o755)
    blocking = first_blocking_directory(target / "data", STRANGER)
    # Only directories above tmp_path (e.g. pytest's private base) may block.
    assert blocking is None or blocking not in {tmp_path, tmp_path / "a", target}


def test_private_parent_blocks_and_is_named(tmp_path: Path) -> None:
    private = tmp_path / "home-like"
    private.mkdir(mode=0o700)
    (private / "inner").mkdir(mode=0o755)
    blocking = first_blocking_directory(private / "inner" / "data", STRANGER)
    assert blocking is not None
    assert blocking == private or blocking in private.parents
    with pytest.raises(LocalServiceError, match="is not traversable by other users"):
        require_reachable(private / "inner" / "data", STRANGER)


def test_owner_bits_apply_to_the_owner(tmp_path: Path) -> None:
    me = ServiceUser("me", uid=os.getuid(), gid=os.getgid())
    private = tmp_path / "mine"
    private.mkdir(mode=0o700)
    assert first_blocking_directory(private / "data", me) in (None, *private.parents)
    assert first_blocking_directory(private / "data", me) != private
