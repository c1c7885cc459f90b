"""Matching skip reports ({"reason", "tag", "field"?, "by"?, "style"?, "topic"?})."""

from __future__ import annotations

REPORT_KEYS = ("reason", "tag", "field", "by", "style", "topic")


def rep(reason: str, tag: int, *, maybe: dict | None = None, **fields) -> dict:
    """An expected report. Keys in `fields` must be present with these values; keys in `maybe` may be
    absent but, if present, must have that value; any other report key must be absent."""
    want = {"reason": reason, "tag": tag, **fields}
    return {"want": want, "maybe": maybe or {}}


def matches(got: dict, exp: dict) -> bool:
    want, maybe = exp["want"], exp["maybe"]
    for k, v in want.items():
        if got.get(k) != v:
            return False
    for k in REPORT_KEYS:
        if k in got and k not in want:
            if k not in maybe or got[k] != maybe[k]:
                return False
    return True


def assert_reports(got: list, expected: list) -> None:
    """`got` matches `expected` one to one, in any order."""
    assert isinstance(got, list), got
    left = list(got)
    for exp in expected:
        for i, g in enumerate(left):
            if matches(g, exp):
                del left[i]
                break
        else:
            raise AssertionError(f"no report matches {exp['want']} (optional {exp['maybe']}) in {got}")
    assert not left, f"unexpected reports {left} (all: {got})"
