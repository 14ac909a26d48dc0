"""Certification driven from the control node: SSH to every node, Slurm steps and jobs, the probe run through srun.

run.py is the entry (`certify`); session.py holds what one run accumulates; fleet.py the SSH connections, srun.py the
steps; slurm_checks, user_steps/user_jobs, node_definition, consistency, network and gpu_jobs each run one kind of
check and read its output; drain.py drains failed nodes. Judging what was measured is certify.judging's job.
"""
