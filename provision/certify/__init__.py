"""Cluster certification: node probe, parsers, thresholds, judgement, report.

Modules that the node-side probe imports (records, expect, health, xid, probe/) use only the standard
library and pynvml, so the probe runs in a small venv on each node; the rest (assemble, report) runs
on the machine that drives certification.
"""
