"""The committed generated code is exactly what scripts/gen_protos.py makes from proto/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "src" / "wheel" / "_proto"


def _files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_generated_code_matches_proto_sources(tmp_path: Path) -> None:
    fresh = tmp_path / "_proto"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_protos.py"), "--out", str(fresh)],
        check=True,
        capture_output=True,
    )
    generated, committed = _files(fresh), _files(COMMITTED)
    assert sorted(generated) == sorted(committed), "files differ: run `make protos`"
    stale = [name for name in generated if generated[name] != committed[name]]
    assert stale == [], f"out of date with proto/: {stale}; run `make protos`"


def test_generated_code_imports_from_its_own_package() -> None:
    from wheel._proto.wheel.v1 import api_pb2, executor_pb2

    request = api_pb2.CreateJobRequest(name="nightly", task_type="report")
    assert api_pb2.CreateJobRequest.FromString(request.SerializeToString()) == request
    dispatch = executor_pb2.SchedulerMessage(dispatch=executor_pb2.Dispatch(fence=7))
    assert dispatch.WhichOneof("body") == "dispatch"
