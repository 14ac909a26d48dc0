"""Slurm's view of the cluster: its node and partition entries (layout), the slurm role's package variables for a
site repository (packages), and what `up` asks of a running Slurm while it changes the cluster (admin)."""
