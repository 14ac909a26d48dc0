"""The GPU benchmark: gpubench.cu (built on each node with nvcc) and a PyTorch reference script."""
