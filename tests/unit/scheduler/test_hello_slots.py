"""An executor's Hello may say its slots and hold, so operators read credit as slots;
a bad value is refused naming the field."""

from __future__ import annotations

import pytest

from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.errors import InvalidArgument
from wheel.scheduler.messages import hello_from_proto


def hello(**fields: object) -> pb.Hello:
    settings: dict[str, object] = {"executor_id": "ex-1", "pools": ["default", "slow"],
                                   "capacity": 20, "instance_id": "i-1"}  # fmt: skip
    settings.update(fields)
    return pb.Hello(**settings)  # type: ignore[arg-type]


def test_slots_and_hold_are_kept() -> None:
    checked = hello_from_proto(hello(slots={"default": 16, "slow": 4}, hold=50_000))
    assert dict(checked.slots) == {"default": 16, "slow": 4}
    assert checked.hold == 50_000


def test_an_executor_that_does_not_say_is_still_welcome() -> None:
    checked = hello_from_proto(hello())
    assert checked.slots == ()
    assert checked.hold == 0


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"slots": {"gpu": 2}}, "hello.slots['gpu']"),
        ({"slots": {"default": 0}}, "hello.slots['default']"),
        ({"hold": 2_000_000}, "hello.hold"),
    ],
)
def test_bad_slots_or_hold_name_the_field(fields: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidArgument) as raised:
        hello_from_proto(hello(**fields))
    assert raised.value.field == field
