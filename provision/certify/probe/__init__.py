"""The node-side probe: `python -m provision.certify.probe --level quick --expect-json '<json>'`.

It imports only the standard library and pynvml, so it runs in a small venv on every node, and
prints exactly one JSON document on stdout (see collect.run for its fields).
"""

PROBE_VERSION = 1  # bump when the document's fields change meaning; assemble refuses other versions
