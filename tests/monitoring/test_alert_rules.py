"""The alert rules, checked by Prometheus' own ``promtool``: the file is valid, each alert
fires on a synthetic series made to trip it and stays silent on a healthy one
(``rules_test.yaml``), and each has a runbook section in ``docs/runbooks.md``."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml
from monitoring import ALERTS, ROOT, need

UNIT_TESTS = Path(__file__).with_name("rules_test.yaml")
RUNBOOKS = ROOT / "docs" / "runbooks.md"


def alerts() -> list[dict[str, object]]:
    groups = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    command = [need("promtool"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_promtool_checks_the_rules() -> None:
    checked = promtool("check", "rules", str(ALERTS))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in checked.stdout


def test_each_alert_fires_on_its_series_and_stays_silent_otherwise() -> None:
    tested = promtool("test", "rules", str(UNIT_TESTS))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    cases = [
        case
        for test in yaml.safe_load(UNIT_TESTS.read_text(encoding="utf-8"))["tests"]
        for case in test["alert_rule_test"]
    ]
    for rule in alerts():
        mine = [case for case in cases if case["alertname"] == rule["alert"]]
        assert any(case["exp_alerts"] for case in mine), f"{rule['alert']} never fires"
        assert any(not case["exp_alerts"] for case in mine), f"{rule['alert']} never silent"


def test_each_alert_has_a_runbook_section() -> None:
    headings = re.findall(r"^## (\S+)$", RUNBOOKS.read_text(encoding="utf-8"), re.MULTILINE)
    anchors = {heading.lower() for heading in headings}
    for rule in alerts():
        annotations = rule["annotations"]
        assert isinstance(annotations, dict)
        page, _, anchor = annotations["runbook_url"].partition("#")
        assert page == "docs/runbooks.md", rule["alert"]
        assert anchor == str(rule["alert"]).lower()
        assert anchor in anchors, f"no runbook section for {rule['alert']}"
