"""Each role's interface by machine (issue 37): meta/argument_specs.yml declares every variable of defaults/main.yml
with its type, README.md documents every one, and Ansible's own validator accepts what real runs give the roles.

The entry point is `interface`, never `main`: under `main` Ansible prepends a validate_argument_spec task to the role
(ansible/playbook/role/__init__.py), a task per role and host on every deploy. Platform's role_inputs action checks
the inventory's and extra vars' values once per run instead (tests/unit/roles/test_role_inputs.py). The values
checked here are what deploys give the roles: the literal defaults, what the rendered example inventories
(inventories/<name>/) set, and what each declared variable templates to at role start on each host of those
inventories (so that a role's own defaults stay valid too).
"""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleError
from ansible.inventory.manager import InventoryManager
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar
from ansible.utils.collection_loader import AnsibleCollectionConfig
from ansible.vars.manager import VariableManager

REPO = Path(__file__).resolve().parents[3]
ROLES_DIR = REPO / "playbooks" / "roles"
ROLES = sorted(path.name for path in ROLES_DIR.iterdir() if path.is_dir())
INVENTORIES = sorted(path.name for path in (REPO / "inventories").iterdir() if (path / "hosts.yml").is_file())
TYPES = {"str", "int", "bool", "list", "dict", "path", "float", "raw"}

ENTRY_POINT = "interface"
# Defaults Ansible cannot template before the role's own tasks ran (they read vars the role loads, or facts it
# gathers): declared, they would fail the role on every node. README.md documents them all the same.
LATE_BOUND = {"rdma": {"rdma_doca_os_label", "rdma_doca_repository_url"}}


def _is_template(value) -> bool:
    """Whether a value (or anything inside it) is a Jinja expression Ansible templates."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(_is_template(v) for v in value.values())
    if isinstance(value, list):
        return any(_is_template(v) for v in value)
    return False


@cache
def _defaults(role: str) -> dict:
    return yaml.safe_load((ROLES_DIR / role / "defaults" / "main.yml").read_text()) or {}


@cache
def _entry_point(role: str) -> dict:
    specs = yaml.safe_load((ROLES_DIR / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    return specs[ENTRY_POINT]


def _options(role: str) -> dict:
    return _entry_point(role)["options"]


def _errors(role: str, values: dict) -> list[str]:
    """What Ansible's validator says of these values of the role's variables (nothing: accepted)."""
    return ArgumentSpecValidator(_options(role)).validate(values).error_messages


def _declared(role: str) -> list[str]:
    return sorted(set(_defaults(role)) - LATE_BOUND.get(role, set()))


@pytest.mark.parametrize("role", ROLES)
def test_every_role_has_an_argument_spec_entry_point_and_a_readme(role):
    assert (ROLES_DIR / role / "meta" / "argument_specs.yml").is_file()
    assert (ROLES_DIR / role / "README.md").is_file()
    assert _entry_point(role).get("short_description") and isinstance(_options(role), dict)


@pytest.mark.parametrize("role", ROLES)
def test_the_only_entry_point_is_interface_so_ansible_adds_no_task_per_host(role):
    specs = yaml.safe_load((ROLES_DIR / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    tasks = {path.stem for path in (ROLES_DIR / role / "tasks").glob("*.yml")}
    assert list(specs) == [ENTRY_POINT] and ENTRY_POINT not in tasks


@pytest.mark.parametrize("role", ROLES)
def test_the_spec_declares_every_default_and_nothing_else(role):
    assert sorted(_options(role)) == _declared(role)


@pytest.mark.parametrize("role", ROLES)
def test_every_option_has_a_type_a_description_and_is_optional(role):
    bad = [name for name, option in _options(role).items()
           if option.get("type") not in TYPES or option.get("required") is not False
           or not str(option.get("description", "")).strip()
           or (option["type"] == "list" and "elements" not in option)]
    assert bad == []


@pytest.mark.parametrize("role", ROLES)
def test_the_spec_default_is_the_literal_default_or_absent_for_a_jinja_one(role):
    """A literal default is repeated exactly (type included); a Jinja default is not, and the description says so."""
    wrong = []
    for name, option in _options(role).items():
        value = _defaults(role)[name]
        if _is_template(value):
            if "default" in option or "Jinja default" not in option["description"]:
                wrong.append(name)
        elif json.dumps(option.get("default", "<no default>"), sort_keys=True) != json.dumps(value, sort_keys=True):
            wrong.append(name)
    assert wrong == []


@pytest.mark.parametrize("role", ROLES)
def test_the_readme_lists_every_default_in_a_table(role):
    rows = [line for line in (ROLES_DIR / role / "README.md").read_text().splitlines() if line.startswith("|")]
    assert [name for name in _defaults(role) if not any(f"`{name}`" in row for row in rows)] == []


@pytest.mark.parametrize("role", ROLES)
def test_ansible_accepts_the_literal_defaults(role):
    literal = {name: value for name, value in _defaults(role).items()
               if name in _options(role) and not _is_template(value)}
    assert _errors(role, literal) == []


def _load(path: Path):
    """A file as Ansible reads it (!unsafe included), with no value trusted as a template."""
    return DataLoader().load_from_file(str(path)) or {}


def _group_settings(name: str, group: dict):
    """(where, variable, value) of a hosts.yml group: its vars, its hosts' vars, then its children's."""
    group = group or {}
    for variable, value in (group.get("vars") or {}).items():
        yield f"group {name}", variable, value
    for host, variables in (group.get("hosts") or {}).items():
        for variable, value in (variables or {}).items():
            yield f"host {host}", variable, value
    for child, data in (group.get("children") or {}).items():
        yield from _group_settings(child, data)


def _inventory_settings(name: str) -> list[tuple[str, str, object]]:
    """Every variable a rendered inventory sets: hosts.yml, then group_vars/ and host_vars/."""
    root = REPO / "inventories" / name
    settings = [(f"hosts.yml {where}", variable, value)
                for group, data in _load(root / "hosts.yml").items()
                for where, variable, value in _group_settings(group, data)]
    for path in sorted([*root.glob("group_vars/**/*.y*ml"), *root.glob("host_vars/**/*.y*ml")]):
        settings += [(str(path.relative_to(root)), variable, value) for variable, value in _load(path).items()]
    return settings


def _inventory_errors(settings) -> list[str]:
    """Each inventory value of a variable a role declares (Jinja left out: its value is known at run time only)."""
    found = []
    for where, variable, value in settings:
        for role in ROLES:
            if variable in _options(role) and not _is_template(value):
                found += [f"{where}: {role}: {error}" for error in _errors(role, {variable: value})]
    return found


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_ansible_accepts_what_the_inventory_gives_the_roles(inventory):
    settings = _inventory_settings(inventory)
    assert any(variable in _options("slurm") for _, variable, _ in settings)  # the walk reaches the role variables
    assert _inventory_errors(settings) == []


def _role_file(loader: DataLoader, path: Path) -> dict:
    """A role's defaults or vars file as Ansible loads it: its Jinja is trusted, templated when used."""
    return (loader.load_from_file(str(path), trusted_as_template=True) or {}) if path.exists() else {}


@cache
def _role_start(inventory: str) -> dict[tuple[str, str], dict]:
    """(host, role) -> each of the role's defaults as Ansible templates it before the role's first task, or the
    error it raises: role defaults under the inventory's variables (groups, hostvars and the other magic variables
    included) under the role's vars/main.yml, as Ansible ranks them. No facts: the plays gather none (site.yml), so
    the first role to run on a host has none."""
    if not AnsibleCollectionConfig.collection_finder:
        init_plugin_loader()  # the template filters (regex_replace, ...) are plugins
    loader = DataLoader()
    inventory_manager = InventoryManager(loader=loader, sources=[str(REPO / "inventories" / inventory)])
    variable_manager = VariableManager(loader=loader, inventory=inventory_manager)
    role_data = {role: [_role_file(loader, ROLES_DIR / role / kind / "main.yml") for kind in ("defaults", "vars")]
                 for role in ROLES}
    first = {}  # one host per node group: the rendered inventory gives the hosts of a group the same variables
    for host in inventory_manager.get_hosts():
        first.setdefault(host.get_vars().get("node_group", host.name), host)
    out = {}
    for host in first.values():
        host_vars = variable_manager.get_vars(host=host)
        for role, (defaults, role_vars) in role_data.items():
            variables = {**defaults, **host_vars, **role_vars}
            templar = Templar(loader=loader, variables=variables)
            out[host.name, role] = {}
            for name in defaults:
                try:
                    out[host.name, role][name] = templar.template(variables[name])
                except AnsibleError as error:  # undefined variable, bad template: the finding
                    out[host.name, role][name] = error
    return out


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_ansible_accepts_the_declared_variables_as_templated_at_role_start(inventory):
    found = []
    for (host, role), values in _role_start(inventory).items():
        declared = {name: value for name, value in values.items() if name in _options(role)}
        found += [f"{host}: {role}: {name} cannot be templated: {value}" for name, value in declared.items()
                  if isinstance(value, Exception)]
        found += [f"{host}: {role}: {error}" for error in _errors(role, declared)]
    assert found == []


@pytest.mark.parametrize("role,name", sorted((role, name) for role, names in LATE_BOUND.items() for name in names))
def test_a_default_left_out_of_the_spec_cannot_be_templated_at_role_start(role, name):
    """The reason it is left out: once it templates at role start on every host, declare it."""
    results = [values[name] for inventory in INVENTORIES
               for (_, start_role), values in _role_start(inventory).items() if start_role == role]
    assert results and all(isinstance(result, Exception) for result in results)


@pytest.mark.parametrize("role,values,culprit", [
    ("nvidia_driver", {"nvidia_driver_branch": "five-seventy"}, "nvidia_driver_branch"),
    ("common", {"common_manage_etc_hosts": "perhaps"}, "common_manage_etc_hosts"),
    ("cuda", {"cuda_versions": {"12": "8"}}, "cuda_versions"),
    ("slurm", {"slurm_nodes": [{"names": "gpu01", "cpu": 8}]}, "cpu"),
    ("slurm", {"slurm_partitions": [{"name": "batch", "nodes": "gpu01"}]}, "default"),
])
def test_the_validator_refuses_a_wrong_value_and_names_it(role, values, culprit):
    errors = _errors(role, values)
    assert errors and culprit in " ".join(errors)


def test_a_wrong_value_in_an_inventory_is_refused_where_it_is_set():
    settings = [*_inventory_settings("sandbox"), ("group_vars/all/extra.yml", "slurm_health_interval", "hourly")]
    [error] = _inventory_errors(settings)
    assert error.startswith("group_vars/all/extra.yml: slurm: ") and "slurm_health_interval" in error
