"""The sandbox provider: simulated Debian 12 nodes on this machine (namespaces, overlay roots, a bridge).

config.py is its spec section and defaults, validation.py its checks of a spec; provider.py implements the Provider
interface from the pieces: network, node, fleet, processes, rootfs, image and the packages it adds, aptproxy
and mirror, record, audit.
"""
