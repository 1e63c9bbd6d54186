"""Every field of each process's configuration says what it is (the CLI help and docs lean
on these)."""

from __future__ import annotations

import ast
import inspect

import pytest

from wheel.dev.config import DevConfig
from wheel.executor.config import ExecutorConfig
from wheel.scheduler.config import SchedulerConfig


@pytest.mark.parametrize("config", [SchedulerConfig, ExecutorConfig, DevConfig])
def test_every_field_has_a_docstring(config: type) -> None:
    (cls,) = ast.parse(inspect.getsource(config)).body
    assert isinstance(cls, ast.ClassDef)
    undocumented = []
    for index, node in enumerate(cls.body):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            after = cls.body[index + 1] if index + 1 < len(cls.body) else None
            documented = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            if not documented:
                undocumented.append(node.target.id)
    assert undocumented == []
