"""Liveness follows the event loop's turns; readiness is what the process last said."""

from __future__ import annotations

from wheel.probes import Probes


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_alive_while_the_loop_beats_and_not_after_it_stalls() -> None:
    clock = _Clock()
    probes = Probes(stall_after_s=30.0, clock=clock)
    clock.now += 29.0
    assert probes.liveness() is None
    clock.now += 2.0
    assert probes.liveness() == "the event loop has not run for 31 s"
    probes.beat()
    assert probes.liveness() is None


def test_readiness_says_why_until_ready_and_again_after() -> None:
    probes = Probes()
    assert probes.readiness() == "starting"
    probes.not_ready("waiting for the database schema")
    assert probes.readiness() == "waiting for the database schema"
    probes.ready()
    assert probes.readiness() is None
    probes.not_ready("stopping")
    assert probes.readiness() == "stopping"
