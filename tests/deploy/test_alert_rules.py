"""The Prometheus rules in deploy/prometheus: valid, unit-tested (each alert made to fire,
and none by a healthy cluster), free of any scrape job's name, and every alert
docs/operations.md describes is among them."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "wheel-rules.yml"
TESTS = ROOT / "deploy" / "prometheus" / "wheel-rules.test.yml"


def _promtool(*args: str) -> str:
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool is needed: Debian's prometheus package (.ci/run)"
    done = subprocess.run([promtool, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_rules_are_valid() -> None:
    alerts = len(re.findall(r"^\s+- alert: ", RULES.read_text(), re.MULTILINE))
    assert alerts >= 10
    assert f"SUCCESS: {alerts} rules found" in _promtool("check", "rules", str(RULES))


def _alerts() -> set[str]:
    return set(re.findall(r"^\s+- alert: (\w+)$", RULES.read_text(), re.MULTILINE))


def test_each_alert_fires_when_it_should_and_not_before() -> None:
    assert "SUCCESS" in _promtool("test", "rules", str(TESTS))


def test_every_alert_has_a_case_that_makes_it_fire_and_a_healthy_cluster_fires_none() -> None:
    cases = yaml.safe_load(TESTS.read_text())["tests"]
    checks = [check for case in cases for check in case.get("alert_rule_test", [])]
    assert {check["alertname"] for check in checks if check["exp_alerts"]} == _alerts()
    (healthy,) = [case for case in cases if case["name"].startswith("a healthy cluster")]
    quiet = {c["alertname"] for c in healthy["alert_rule_test"] if c["exp_alerts"] == []}
    assert quiet == _alerts()


def test_no_rule_depends_on_what_the_scrape_job_is_called() -> None:
    """The job label is the Prometheus configuration's: rules find wheel by wheel_build_info."""
    expressions = re.findall(r"^\s+expr: (.+)$", RULES.read_text(), re.MULTILINE)
    assert len(expressions) == len(_alerts())
    assert [e for e in expressions if re.search(r"\bjob\b", e)] == []


def test_every_alert_the_operations_guide_describes_is_a_rule() -> None:
    guide = (ROOT / "docs" / "operations.md").read_text()
    table = guide.split("Alerts worth having", 1)[1].split("\n## ", 1)[0]
    described = re.findall(r"^\| [^|]+ \| `([^`]+)`", table, re.MULTILINE)
    assert len(described) >= 9
    rules = RULES.read_text()
    for expression in described:
        assert f"expr: {expression}" in rules, expression
