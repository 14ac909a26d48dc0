"""Where nodes come from: one package per provider (sandbox, static, aws) behind the interface in base.py.

registry.py names them; only the lifecycle (and spec/, for the union of the providers' spec sections) looks a
provider up. Everything after the nodes exist works on the typed ClusterInfo, whoever made it.
"""
