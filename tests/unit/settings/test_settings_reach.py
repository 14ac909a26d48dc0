"""Which nodes a variable reaches and what its change restarts, read from the roles: the real ones, and a small
playbook tree that shows each path the reading follows (template, vars chain, registered result, dependency, include,
host pattern)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from provision.settings.reach import hosts_matching, reach


@pytest.mark.parametrize("variable, roles, patterns, restarts", [
    ("slurm_conf_parameters", ("slurm",), ("controller:compute:login",), ("slurmctld", "slurmd")),
    ("slurm_health_interval", ("slurm",), ("controller:compute:login",), ("slurmctld", "slurmd")),
    ("slurm_accounting_db_password_file", ("slurm",), ("controller:compute:login",), ("slurmdbd",)),
    ("munge_key_file", ("munge",), ("all",), ("munge",)),  # through the stat of the key file (a registered result)
    ("filesystem_type", ("shared_mount",), ("all",), ()),
    ("certify_level", (), (), ()),  # read by no role: it reaches no node
])
def test_the_real_roles_say_who_reads_a_variable_and_what_its_change_restarts(variable, roles, patterns, restarts):
    found = reach(variable)
    assert (found.roles, found.patterns, found.restarts) == (roles, patterns, restarts)


def test_a_value_other_hosts_read_through_hostvars_goes_wide():
    assert reach("ansible_host").via_hostvars  # slurm.conf names the controller's address on every node
    assert not reach("node_gpu_count").via_hostvars


def _tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(textwrap.dedent(text))
    return root


@pytest.fixture
def playbooks(tmp_path) -> Path:
    return _tree(tmp_path, {
        "site.yml": """
            - hosts: db:&primary
              roles: [{role: store}]
            - import_playbook: more.yml
            """,
        "more.yml": """
            - hosts: all:!db
              tasks:
                - ansible.builtin.include_role: {name: web}
            """,
        "roles/base/defaults/main.yml": "base_motd: hello\n",
        "roles/base/tasks/main.yml": "- ansible.builtin.debug: {msg: '{{ base_motd }}'}\n",
        "roles/store/meta/main.yml": "dependencies: [{role: base}]\n",
        "roles/store/defaults/main.yml": "store_size: 1\nstore_port: 5\n",
        "roles/store/vars/main.yml": "_store_args: \"--size {{ store_size }}\"\n_store_files: [store.conf]\n",
        "roles/store/templates/store.conf.j2": "args={{ _store_args }}\n",
        "roles/store/tasks/main.yml": """
            - name: Write the configuration files
              ansible.builtin.template: {src: "{{ item }}.j2", dest: "/etc/{{ item }}"}
              loop: "{{ _store_files }}"
              notify: Restart store
            - name: Open the port
              ansible.builtin.command: "open {{ store_port }}"
              notify: Reload firewall
            """,
        "roles/store/handlers/main.yml": """
            - name: Restart store
              ansible.builtin.systemd: {name: stored, state: restarted}
            - name: Reload firewall
              ansible.builtin.systemd: {name: firewalld, state: reloaded}
            """,
        "roles/web/templates/site.j2": "{{ hostvars[groups['db'][0]].store_port }}\n",
        "roles/web/tasks/main.yml": "- ansible.builtin.template: {src: site.j2, dest: /srv/site}\n",
    })


def test_a_change_follows_vars_and_templates_to_the_handlers_it_notifies(playbooks):
    size = reach("store_size", playbooks)
    assert size.roles == ("store",) and size.patterns == ("db:&primary",)
    assert size.restarts == ("stored",)  # store_size -> _store_args -> store.conf.j2 -> "store.conf" -> the task
    port = reach("store_port", playbooks)
    assert port.roles == ("store", "web") and port.restarts == ()  # a reload restarts nothing
    assert port.patterns == ("db:&primary", "all:!db") and port.via_hostvars


def test_a_role_runs_where_the_roles_that_need_it_run(playbooks):
    assert reach("base_motd", playbooks).patterns == ("db:&primary",)  # base: a dependency of store


@pytest.mark.parametrize("pattern, hosts", [
    ("all", ["ctl01", "cn01", "cn02", "gpu01"]),
    ("controller:compute", ["ctl01", "cn01", "cn02", "gpu01"]),
    ("compute:!gpu", ["cn01", "cn02"]),
    ("compute:&gpu", ["gpu01"]),
    ("cn02,ctl01", ["ctl01", "cn02"]),
    ("login", []),
])
def test_host_patterns_select_as_ansible_does(pattern, hosts):
    groups = {"ctl01": ["controller"], "cn01": ["compute"], "cn02": ["compute"], "gpu01": ["compute", "gpu"]}
    assert hosts_matching(pattern, groups) == hosts
