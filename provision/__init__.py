"""gpu-provision: turn bare servers or cloud instances into a certified GPU cluster."""

__version__ = "0.1.0"
