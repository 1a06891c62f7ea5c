"""The suite's own rules, kept by a test so that they do not drift back: property tests have no
wall-clock deadline (a loaded machine fails a correct test against one), and the one hypothesis
profile of tests/conftest.py is the only place such settings are made."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import HealthCheck, settings

TESTS = Path(__file__).parent


def test_property_tests_run_without_a_deadline_or_the_too_slow_check():
    current = settings()
    assert current.deadline is None
    assert HealthCheck.too_slow in current.suppress_health_check


def test_no_test_module_sets_a_deadline_of_its_own():
    found = [f"{path.name}:{node.lineno}"
             for path in sorted(TESTS.glob("*.py")) if path.name != "conftest.py"
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and any(k.arg == "deadline" for k in node.keywords)]
    assert found == [], "set deadline in the conftest profile only"
