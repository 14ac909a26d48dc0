"""Cluster certification, split by where the code runs.

- probe/: the node side. Runs on every node in its own venv and imports only the standard library and
  nvidia-ml-py; the bundle ships this package and nothing else. It holds what both sides share: the check and
  measurement records (probe/records.py), the node's expectation (probe/expect.py), the probe's document
  (probe/document.py) and the GPU catalogue (probe/gpus.py). The control side imports it, never the reverse.
- control/: the control side's orchestration: SSH to every node, Slurm steps and jobs, the probe through srun
  (control/run.py: `certify`).
- judging/: every measurement and run judged against its floor and its peers, into one report (pure).
- report/: the report as JSON, JUnit and HTML; records.py: the report's records.
- catalogue.py: every check id, its unit, what it proves and where its threshold comes from.
- parsers/: tool output read on the control side (nccl-tests, ib_write_bw, iperf3); bundle.py: what the
  certify role ships; gpubench/: the GPU benchmark built on the nodes and its comparison with PyTorch.
"""
