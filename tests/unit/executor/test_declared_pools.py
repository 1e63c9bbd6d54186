"""A task that declares a pool runs in it or not at all: an executor that does not serve
the pool refuses to start, naming the task, the pool and the option that serves it (it
used to warn "task_pool_not_served" and run the task in `default`). `wheel dev --pool`
serves such pools beside `default`."""

from __future__ import annotations

import pytest

from wheel.dev.config import DevConfig
from wheel.errors import ConfigError
from wheel.executor.config import ExecutorConfig
from wheel.executor.executor import Executor
from wheel.executor.tasks import TaskRegistry


def registry() -> TaskRegistry:
    tasks = TaskRegistry()
    tasks.register("send_report", lambda ctx: None)
    tasks.register("resize", lambda ctx: None, pool="slow")
    return tasks


async def test_an_executor_not_serving_a_declared_pool_refuses_to_start() -> None:
    config = ExecutorConfig("mine", nodes=("127.0.0.1:1",), pools={"default": 4}, token="whl_x")
    executor = Executor(config, registry())
    with pytest.raises(ConfigError) as refused:
        await executor.start()
    assert refused.value.field == "pools"
    assert refused.value.reason == (
        "task 'resize' declares pool 'slow', which this executor does not serve "
        "(it serves default=4): add --pool slow=N"
    )


def test_wheel_dev_serves_the_pools_it_is_given(tmp_path: object) -> None:
    assert DevConfig(data_dir=tmp_path, pools=("slow=4",)).pools == ("slow=4",)  # type: ignore[arg-type]
    for bad in ["slow", "slow=x", "=4", "default=2"]:
        with pytest.raises(ConfigError) as refused:
            DevConfig(data_dir=tmp_path, pools=(bad,))  # type: ignore[arg-type]
        assert refused.value.field == "pools"
