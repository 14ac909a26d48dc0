"""The cluster spec: its structure (model.py, section.py, shapes.py), reading it within limits (reader.py), loading
and validating it (loader.py: `load_spec`, `validate_file`), semantic checks (validators.py), named nodes
(topology.py) and findings (findings.py). Each provider's own section lives in its provider package.
"""
