"""Cluster certification: node probe, parsers, thresholds, judgement, report.

Modules that the node-side probe imports (records, expect, health, xid, probe/) use only the standard
library and pynvml, so the probe runs in a small venv on each node; the rest (assemble, report) runs
on the machine that drives certification. The runner (run.py: fleet, srun, slurm_checks, network,
gpu_jobs) drives the probe through Slurm over SSH; bundle.py stages what the certify role installs.
"""
