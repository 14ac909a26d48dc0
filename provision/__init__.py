"""gpu-provision: turn bare servers or cloud instances into a certified GPU cluster."""

__version__ = "0.2.0.dev0"  # CHANGELOG.md: 0.2.0 (unreleased)
