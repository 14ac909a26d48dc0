"""The aws provider: EC2 GPU instances with EFA in a cluster placement group, optionally FSx for Lustre.

config.py is its spec section; provider.py implements the Provider interface; the work is split by
concept: validation (spec only),
environment (read-only API checks; what they learn in facts, the vCPU quota in quota), claim (the name, one cluster
per region), tags (name and cluster id on every resource), network, security, placement, fsx, instances, create (up),
teardown and audit (down), plan and prices. All AWS calls go through provision.adaptors.aws.
"""
