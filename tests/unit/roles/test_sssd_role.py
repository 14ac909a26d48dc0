"""The sssd role's decisions and files (playbooks/roles/sssd/filter_plugins/sssd_config.py): sssd.conf from the
directory's settings, hostile values refused or written as inert data (never a second line, never a setting of their
own, the password never shown), nsswitch.conf with sss after the local files and without it once the directory is
gone, and what a node needs from node_probe answers. The bind password's way through real Ansible: read under no_log,
it reaches the rendered file and no run artifact."""
from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from role_plugins import load_plugin

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "playbooks" / "roles" / "sssd"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"

sc = load_plugin(ROLE / "filter_plugins" / "sssd_config.py", "sssd_config_under_test")

SETTINGS = {"domain": "directory", "uri": "ldaps://ldap.example.org:636", "base_dn": "dc=example,dc=org",
            "ca_file": "/etc/sssd/gpu-provision-ldap-ca.pem", "bind_dn": "cn=reader,ou=services,dc=example,dc=org",
            "password": "s3cret pass;#=%{{ x }}\n", "home_base": "/shared/home"}

MAIN = f"""{sc.MARK}

[sssd]
config_file_version = 2
services = nss, pam
domains = directory

[nss]

[pam]
"""

EXPECTED = f"""{sc.MARK}

[domain/directory]
id_provider = ldap
auth_provider = ldap
chpass_provider = none
access_provider = permit
ldap_schema = rfc2307
ldap_uri = ldaps://ldap.example.org:636
ldap_search_base = dc=example,dc=org
ldap_tls_cacert = /etc/sssd/gpu-provision-ldap-ca.pem
ldap_tls_reqcert = demand
ldap_default_bind_dn = cn=reader,ou=services,dc=example,dc=org
ldap_default_authtok_type = password
ldap_default_authtok = s3cret pass;#=%{{{{ x }}}}
override_homedir = /shared/home/%u
min_id = 1000
enumerate = false
cache_credentials = false
"""


def test_sssd_conf_names_the_responders_and_the_domain_and_holds_no_secret():
    assert sc.sssd_main_conf("directory") == MAIN


def test_the_domain_is_one_ldap_domain_over_verified_tls_with_a_bound_search():
    assert sc.sssd_conf(SETTINGS) == EXPECTED


def test_plain_ldap_requires_starttls_and_no_bind_dn_is_an_anonymous_search():
    text = sc.sssd_conf({**SETTINGS, "uri": "ldap://ldap.example.org", "bind_dn": "", "password": ""})
    assert "ldap_id_use_start_tls = true\n" in text and "ldap_tls_reqcert = demand\n" in text
    assert "ldap_default_bind_dn" not in text and "authtok" not in text


def test_a_percent_in_the_home_base_is_literal_for_override_homedir():
    assert "override_homedir = /data/100%%/home/%u\n" in sc.sssd_conf({**SETTINGS, "home_base": "/data/100%/home/"})


# Each would add a line (a setting or a section of its own) to sssd.conf, or be read otherwise than written.
HOSTILE = ["x\nid_provider = proxy", "x\n[domain/evil]\nid_provider = proxy", "x\r\nldap_tls_reqcert = never",
           "x\u2028ldap_tls_reqcert = never", "x\0", " x", "x ", "x\t", "", "\n  continued"]


@pytest.mark.parametrize("field, value", [(f, v) for f in ("uri", "base_dn", "bind_dn", "home_base", "ca_file")
                                          for v in HOSTILE if v or f not in ("uri", "bind_dn")], ids=repr)
def test_a_value_that_is_not_one_printable_line_is_refused(field, value):
    with pytest.raises(AnsibleFilterError, match="not one line of printable|not ldap|not an absolute"):
        sc.sssd_conf({**SETTINGS, field: value if field != "uri" else f"ldaps://ldap.example.org{value}"})


@pytest.mark.parametrize("value", [v for v in HOSTILE if v not in ("x ",)] + ["two\nlines\n", "x\n\n"], ids=repr)
def test_a_bad_password_is_refused_without_being_shown(value):
    with pytest.raises(AnsibleFilterError) as refused:
        sc.sssd_conf({**SETTINGS, "password": value})
    assert "the password" in str(refused.value) and (not value.strip() or value.strip() not in str(refused.value))


def test_a_domain_name_that_is_not_a_word_is_refused():
    for domain in ("a b", "x]\n[sssd", "", "../x"):
        with pytest.raises(AnsibleFilterError, match="domain"):
            sc.sssd_conf({**SETTINGS, "domain": domain})
        with pytest.raises(AnsibleFilterError, match="domain"):
            sc.sssd_main_conf(domain)


@pytest.mark.parametrize("value", ["{{ lookup('pipe', 'touch /tmp/M') }}", "$(touch /tmp/M)", "`id`; x || y &",
                                   "ｘ＄（ｙ）"])
def test_values_of_one_line_are_written_as_they_are(value):
    text = sc.sssd_conf({**SETTINGS, "base_dn": value, "password": value})
    assert f"ldap_search_base = {value}\n" in text and f"ldap_default_authtok = {value}\n" in text
    assert len(text.splitlines()) == len(EXPECTED.splitlines())


# --- nsswitch.conf ------------------------------------------------------------------------------------------------

DEBIAN = """\
# /etc/nsswitch.conf
#
# passwd: sss files   (a comment stays as it is)

passwd:         files systemd
group:          files systemd
shadow:         files systemd
gshadow:        files systemd

hosts:          files dns
networks:       files
"""


def test_sss_comes_after_the_local_files_on_the_passwd_group_and_shadow_lines_only():
    text = sc.sssd_nsswitch(DEBIAN, True)
    assert text.splitlines() == [*DEBIAN.splitlines()[:4], "passwd:         files systemd sss",
                                 "group:          files systemd sss", "shadow:         files systemd sss",
                                 *DEBIAN.splitlines()[7:]]
    assert sc.sssd_nsswitch(text, True) == text  # a second run changes nothing


def test_sss_that_a_package_put_first_moves_after_the_files_and_missing_lines_are_added():
    text = sc.sssd_nsswitch("passwd: sss files\ngroup: files\nservices: files sss\n", True)
    assert text == "passwd: files sss\ngroup: files sss\nservices: files sss\nshadow: files sss\n"


def test_without_a_directory_sss_is_on_no_line():
    text = sc.sssd_nsswitch(sc.sssd_nsswitch(DEBIAN, True) + "netgroup: nis sss\nsudoers: files sss\n", False)
    assert text == DEBIAN + "netgroup: nis\nsudoers: files\n"


# --- what a node needs, from node_probe answers ----------------------------------------------------------------------

PACKAGES = ["sssd-ldap", "libnss-sss", "libpam-sss"]
PAM_ON = "auth [success=2 default=ignore] pam_unix.so\nauth [success=1 default=ignore] pam_sss.so use_first_pass\n" \
         f"session optional {sc.MKHOMEDIR}\n"


def _probe(installed: bool, ours: bool, nsswitch: str, pam: str, running: bool) -> dict:
    return {"packages": {name: {"name": name, "installed": installed} for name in PACKAGES},
            "files": {"ca": {"exists": ours, "type": "file" if ours else None}},
            "services": {"sssd": {"active": "active" if running else "inactive",
                                  "enabled": "enabled" if running else "disabled"}},
            "outputs": {"nsswitch": nsswitch.rstrip("\n"), "pam": pam}}


def test_a_fresh_node_installs_writes_enables_pam_and_starts_sssd():
    plan = sc.sssd_plan(_probe(False, False, DEBIAN, "auth pam_unix.so\n", False), True, PACKAGES)
    assert (plan["missing"], plan["nsswitch_differs"], plan["pam"], plan["undo"], plan["start"]) == (
        PACKAGES, True, "enable", False, True)


def test_a_converged_node_changes_nothing():
    plan = sc.sssd_plan(_probe(True, True, sc.sssd_nsswitch(DEBIAN, True), PAM_ON, True), True, PACKAGES)
    assert (plan["missing"], plan["nsswitch_differs"], plan["pam"], plan["undo"], plan["start"]) == (
        [], False, "", False, False)


def test_a_node_the_role_never_configured_is_left_alone_without_a_directory():
    plan = sc.sssd_plan(_probe(True, False, DEBIAN.replace("files systemd", "files sss"), PAM_ON, True), False,
                        PACKAGES)
    assert (plan["missing"], plan["nsswitch_differs"], plan["pam"], plan["undo"], plan["start"]) == (
        [], False, "", False, False)


def test_a_node_the_role_configured_is_taken_back_once_the_directory_is_gone():
    plan = sc.sssd_plan(_probe(True, True, sc.sssd_nsswitch(DEBIAN, True), PAM_ON, True), False, PACKAGES)
    assert (plan["nsswitch"], plan["pam"], plan["undo"], plan["start"]) == (DEBIAN, "disable", True, False)


def test_an_empty_nsswitch_conf_fails_rather_than_being_replaced():
    with pytest.raises(AnsibleFilterError, match="nsswitch.conf is missing or empty"):
        sc.sssd_plan(_probe(True, False, "", "", False), True, PACKAGES)


def test_every_filter_the_role_names_is_the_plugin_s():
    text = "".join(p.read_text() for p in [*(ROLE / "tasks").glob("*.yml"), ROLE / "vars" / "main.yml"])
    assert {f for f in sc.FilterModule().filters() if f"| {f}" in text} == {"sssd_main_conf", "sssd_conf", "sssd_plan"}
    assert "sssd_nsswitch" in sc.FilterModule().filters()  # used by sssd_plan, and on its own by tests


class _Unsafe(yaml.SafeDumper):
    """Writes every string tagged !unsafe, as the rendered inventory does."""


_Unsafe.add_representer(str, lambda dumper, text: dumper.represent_scalar("!unsafe", text, style="'"))


# --- the bind password through real Ansible -----------------------------------------------------------------------

# The role's own expression (tasks/configure.yml, "Render sssd.conf"), in a play that writes to a folder here.
RENDER_TASK = "Render the directory's SSSD domain (holds the bind password)"


def _role_render_task() -> dict:
    tasks = yaml.safe_load((ROLE / "tasks" / "configure.yml").read_text())
    return next(task for task in tasks if task["name"] == RENDER_TASK)


def test_the_render_task_reads_the_password_under_no_log_only():
    task = _role_render_task()
    assert task["no_log"] is True and task["config_files"]["files"][0]["mode"] == "0640"  # group root
    text = "".join(p.read_text() for p in (ROLE / "tasks").glob("*.yml"))
    assert text.count("lookup('ansible.builtin.file', sssd_ldap_bind_password_file") == 1


def test_hostile_inventory_values_and_the_password_reach_sssd_conf_as_data_and_no_artifact(tmp_path):
    from provision.adaptors.ansible import PlaybookRun, run_playbook
    from provision.deploy.events import EventTracker

    marker = tmp_path / "MARKER"
    password = f"pw-{secrets.token_hex(12)}-{{{{ lookup('pipe', 'touch {marker}') }}}}"
    (tmp_path / "bind.pw").write_text(password + "\n")
    hostile = f"{{{{ lookup('pipe', 'touch {marker}') }}}}$(touch {marker})"
    content = _role_render_task()["config_files"]["files"][0]["content"]
    out = tmp_path / "sssd.conf"
    play = [{"name": "Render the domain as the role does", "hosts": "localhost", "gather_facts": False,
             "vars_files": [str(ROLE / "vars" / "main.yml")],
             "tasks": [{"name": RENDER_TASK, "ansible.builtin.copy": {"content": content, "dest": str(out),
                                                                      "mode": "0600"}, "no_log": True}]}]
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    inventory = {"sssd_domain": "directory", "sssd_ldap_uri": "ldaps://ldap.example.org", "sssd_ldap_base_dn": hostile,
                 "sssd_ldap_bind_dn": "cn=reader,dc=example,dc=org", "sssd_home_base": "/shared/home",
                 "sssd_ldap_bind_password_file": str(tmp_path / "bind.pw"), "ansible_connection": "local",
                 "ansible_python_interpreter": sys.executable}
    (tmp_path / "hosts.yml").write_text(yaml.dump({"all": {"hosts": {"localhost": inventory}}}, Dumper=_Unsafe))
    (tmp_path / "ansible.cfg").write_text(f"[defaults]\nfilter_plugins = {ROLE / 'filter_plugins'}\n"
                                          "[diff]\nalways = True\n")  # a task without no_log would show the file
    run = PlaybookRun(private_data_dir=tmp_path / "run", project_dir=tmp_path / "project", playbook="play.yml",
                      inventory=tmp_path / "hosts.yml", ansible_cfg=tmp_path / "ansible.cfg", extra_vars={})
    outcome = run_playbook(run, EventTracker())
    assert outcome.rc == 0, [p.read_text()[-2000:] for p in (run.private_data_dir / "artifacts").glob("*/stdout")]
    written = out.read_text()
    assert f"ldap_search_base = {hostile}\n" in written and f"ldap_default_authtok = {password}\n" in written
    assert not marker.exists()
    holding = subprocess.run(["grep", "-rlF", password.split("-{")[0], str(run.private_data_dir)],
                             capture_output=True, text=True)
    assert holding.stdout == "", holding.stdout
