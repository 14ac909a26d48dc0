"""Judging on the control node: every measurement against its floor (thresholds.py) and its peers (judge.py), NCCL
runs (nccl.py) and the network matrix (netmatrix.py), all put together into one report (assemble.py). Pure: no I/O.
"""
