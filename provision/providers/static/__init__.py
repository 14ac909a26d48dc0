"""The static provider: hosts that already exist (on-prem, bare metal), named with their addresses in the spec.

config.py is its spec section; provider.py implements the Provider interface (nothing to create or remove).
"""
