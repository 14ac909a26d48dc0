"""What a node is and runs: the operating systems supported (platforms), its CPUs and memory (hardware), which driver,
CUDA, NCCL, fabric manager and DCGM versions belong together (compat), the OS and Slurm version it runs (software),
and its health pass (health)."""
