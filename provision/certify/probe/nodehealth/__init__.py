"""The node health program: Slurm's HealthCheckProgram on every compute node, and a service that runs it on the
same interval where the Slurm path is cut (munge or slurmd down stop slurmctld's health-check requests).

Fast (bounded by a deadline well under 10 s), standard library only (nvidia-ml-py where the node has GPUs), shipped
in the certify archive. One pass: run the checks (munge, slurmd, shared mounts, the cluster-wide configuration
digests, NVML health and Xids new since the last pass), then tell Slurm: a failure drains the node with a reason
that names the failed check in its first characters and its evidence ("hc:munge: ... (gpu-provision-health)",
nodehealth.reason); a pass resumes the node only where the program drained it (an admin's drain, or any other
reason, is never touched). Every pass is recorded in STATE_DIR/last.json (`provision health` reads it) and,
where the config names a metrics_dir, as node exporter textfiles for Prometheus (nodehealth.textfiles).
"""
