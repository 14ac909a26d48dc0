"""A reader of Prometheus' text exposition format for the monitoring tests: every line must fit the format's grammar
(text format 0.0.4: a metric name, optional labels name="value" whose values escape backslash, double quote and line
feed, a space, a float; HELP and TYPE comments), and each sample comes back with its labels unescaped."""
from __future__ import annotations

import re

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
VALUE = r'"((?:[^"\\\n]|\\[\\"n])*)"'
LABEL = re.compile(rf"([a-zA-Z_][a-zA-Z0-9_]*)={VALUE},?")
SAMPLE = re.compile(rf"^({NAME})(?:\{{((?:[a-zA-Z_][a-zA-Z0-9_]*={VALUE},?)*)\}})? (\S+)$")
COMMENT = re.compile(rf"^# (HELP {NAME} .*|TYPE {NAME} (gauge|counter))$")
UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def parse(text: str) -> list[tuple[str, dict[str, str], float]]:
    """The samples of a textfile; AssertionError on any line outside the grammar."""
    assert text.endswith("\n") or text == ""
    found = []
    for line in text.split("\n")[:-1]:
        if line.startswith("#"):
            assert COMMENT.match(line), line
            continue
        match = SAMPLE.match(line)
        assert match, line
        labels = {k: re.sub(r"\\[\\\"n]", lambda m: UNESCAPE[m.group(0)], v)
                  for k, v in LABEL.findall(match.group(2) or "")}
        found.append((match.group(1), labels, float(match.group(4))))
    return found
