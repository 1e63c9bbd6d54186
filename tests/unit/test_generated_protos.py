"""The committed generated code is exactly what the generators make: scripts/gen_protos.py
from proto/, scripts/gen_etcd_protos.py from etcd's protos (Debian's package of them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "src" / "wheel" / "_proto"


def _files(root: Path, *, leave_out: str = "") -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and "__pycache__" not in p.parts
        and not (leave_out and p.relative_to(root).parts[0] == leave_out)
    }


def test_generated_code_matches_proto_sources(tmp_path: Path) -> None:
    fresh = tmp_path / "_proto"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_protos.py"), "--out", str(fresh)],
        check=True,
        capture_output=True,
    )
    generated, committed = _files(fresh), _files(COMMITTED, leave_out="etcd")
    assert sorted(generated) == sorted(committed), "files differ: run `make protos`"
    stale = [name for name in generated if generated[name] != committed[name]]
    assert stale == [], f"out of date with proto/: {stale}; run `make protos`"


def test_generated_etcd_code_matches_etcds_protos(tmp_path: Path) -> None:
    fresh = tmp_path / "etcd"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_etcd_protos.py"), "--out", str(fresh)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    generated, committed = _files(fresh), _files(COMMITTED / "etcd")
    assert sorted(generated) == sorted(committed), "files differ: run `make protos`"
    stale = [name for name in generated if generated[name] != committed[name]]
    assert stale == [], f"out of date with etcd's protos: {stale}; run `make protos`"


def test_generated_code_imports_from_its_own_package() -> None:
    from wheel._proto.wheel.v1 import api_pb2, executor_pb2

    request = api_pb2.CreateJobRequest(name="nightly", task_type="report")
    assert api_pb2.CreateJobRequest.FromString(request.SerializeToString()) == request
    dispatch = executor_pb2.SchedulerMessage(dispatch=executor_pb2.Dispatch(fence=7))
    assert dispatch.WhichOneof("body") == "dispatch"


def test_generated_etcd_code_imports_from_its_own_package() -> None:
    from wheel._proto.etcd.etcdserverpb import rpc_pb2
    from wheel._proto.etcd.mvccpb import kv_pb2

    put = rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=b"k", value=b"v", lease=7))
    assert rpc_pb2.RequestOp.FromString(put.SerializeToString()) == put
    assert kv_pb2.Event.DELETE == 1
