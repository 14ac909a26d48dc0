"""SDK adaptors: the only modules that import a cloud or hardware SDK, one module per SDK.

NVML's adaptor runs only on the nodes, so it lives in the node-side package: provision/certify/probe/nvml.py.
"""
