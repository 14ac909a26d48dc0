"""Metrics for Prometheus: what gpu-provision itself exports (the catalogue), and node exporter's textfile format.

Node side, standard library only (the probe package's rule): the node health program, the Slurm collector on the
controller and the control side's writers (certify's and deploy's last results) all name their series from
catalogue.py, so the alert rules and the dashboards can be checked against one list (tests/unit/monitoring).
"""
