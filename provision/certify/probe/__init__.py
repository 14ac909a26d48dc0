"""The node side of certification: `python -m provision.certify.probe --level quick --expect-json '<json>'`.

Everything that runs on a node lives in this package, which imports only the standard library and nvidia-ml-py
(a unit test walks it), so it runs in a small venv on every node; the bundle ships this package, found by walking
it. It prints exactly one JSON document on stdout (document.py). The control side imports from here (the records
both sides share, the expectation, the document, the GPU catalogue); nothing here imports the control side.
"""

PROBE_VERSION = 1  # bump when the document's fields change meaning; assemble refuses other versions
