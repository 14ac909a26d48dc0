"""What a prebuilt node image carries from a role is declared by the role (meta/image.yml), never found by name.

Every list of packages a role names (a variable ending in `_packages` in defaults/main.yml or under vars/) is
declared there, in the image or out of it with a reason; what goes in is a literal list of package names."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from provision.providers.sandbox.packages import IMAGE_META, image_metas, package_names, role_value, service_accounts
from provision.resources import playbooks_dir

ROLES = playbooks_dir() / "roles"
METAS = image_metas()


def _package_lists(role: Path) -> set[tuple[str, str]]:
    """(file, variable) of every list variable named *_packages in a role's defaults and vars files."""
    found = set()
    for path in sorted([role / "defaults/main.yml", *(role / "vars").rglob("*.yml")]):
        values = yaml.safe_load(path.read_text()) if path.is_file() else None
        found |= {(str(path.relative_to(role)), name) for name, value in (values or {}).items()
                  if name.endswith("_packages") and isinstance(value, list)}
    return found


def _declared(role: str) -> set[tuple[str, str]]:
    meta = METAS.get(role)
    return {(d.file, d.variable) for d in (*meta.packages, *meta.not_in_image)} if meta else set()


@pytest.mark.parametrize("role", sorted(p.name for p in ROLES.iterdir() if p.is_dir()))
def test_every_package_list_of_a_role_is_declared_in_or_out_of_the_image(role):
    undeclared = _package_lists(ROLES / role) - _declared(role)
    assert undeclared == set(), f"declare them in {role}/{IMAGE_META}: packages or not_in_image (with why)"


@pytest.mark.parametrize("role", sorted(METAS))
def test_what_a_role_puts_in_the_image_is_a_literal_list_of_names_it_sets(role):
    meta = METAS[role]
    for declared in meta.packages:
        assert package_names(ROLES, role, declared), f"{role}: {declared.variable} is empty"
    for declared in meta.accounts:
        assert service_accounts(ROLES, role, declared)
    for declared in meta.not_in_image:
        role_value(ROLES, role, declared)  # a list the role sets, though not one the image needs to read


@pytest.mark.parametrize("role", sorted(METAS))
def test_no_list_is_declared_twice_or_both_in_and_out(role):
    meta = METAS[role]
    declared = [(d.file, d.variable) for d in (*meta.packages, *meta.not_in_image)]
    assert len(declared) == len(set(declared))
