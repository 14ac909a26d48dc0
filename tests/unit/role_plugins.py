"""Load a role's plugin file (an action or filter plugin under playbooks/roles/) as a module of its own, as the unit
tests of those plugins read them: the file alone, without Ansible's plugin loader."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_plugin(path: Path, name: str) -> ModuleType:
    """The plugin file at `path`, imported under `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
