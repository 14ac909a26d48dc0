"""sssd_config: what the sssd role writes and changes on a node, decided in Python from the node_probe answer.

    {{ domain | sssd_main_conf }}                   -> sssd.conf: the responders and the domain's name
    {{ settings | sssd_conf }}                      -> the domain's conf.d snippet (holds the bind password)
    {{ text | sssd_nsswitch(enabled) }}             -> the text of nsswitch.conf, sss after the local sources
    {{ _sssd_state | sssd_plan(enabled, packages) }} -> {missing, nsswitch, nsswitch_differs, pam, undo, start}

Two files: sssd.conf names the responders and the domain and holds no secret; the domain's settings, the bind password
among them, are a snippet of their own in /etc/sssd/conf.d/, which SSSD merges. Both are INI files that SSSD reads a
line at a time: a value is the rest of its line, a line that starts with blanks continues the one before, `%` starts a template in override_homedir. So every value is refused unless it is one
line of printable characters without blanks at its ends (the spec's shapes are narrower still; the password's check
never shows it), the home base has its `%` doubled, and the domain name is a word. Nothing here goes through a shell
or a template engine: the text is written as data by config_files.
"""
from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

MARK = "# Rendered by gpu-provision (role sssd); a change here is overwritten by the next deploy."
DATABASES = ("passwd", "group", "shadow")
# The line the role's PAM profile adds to common-session (files/gpu-provision-mkhomedir); Debian's own mkhomedir
# profile has no umask, so this one is the role's.
MKHOMEDIR = "pam_mkhomedir.so umask=0077"
PROFILES = ("sss", "gpu-provision-mkhomedir")
_DOMAIN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_URI = re.compile(r"(ldaps?)://[^\s/]+/?")
_NSS_LINE = re.compile(r"(?P<db>[a-z_]+)(?P<gap>\s*:\s*)(?P<sources>.*)")


def _value(option: str, value, secret: bool = False) -> str:
    """One sssd.conf value: a non-empty single line of printable characters without blanks at its ends."""
    if not isinstance(value, str) or not value or not value.isprintable() or value != value.strip():
        shown = "the password" if secret else repr(value)
        raise AnsibleFilterError(f"sssd_conf: {option}: {shown} is not one line of printable characters without "
                                 "blanks at its ends; sssd.conf would read it otherwise")
    return value


def bind_password(text: str) -> str:
    """The password from its file's text: one line, its newline dropped. Never shown in an error."""
    if not isinstance(text, str):
        raise AnsibleFilterError("sssd_conf: the bind password file is not text")
    return _value("ldap_default_authtok", text[:-1] if text.endswith("\n") else text, secret=True)


def _domain(name) -> str:
    if not isinstance(name, str) or not _DOMAIN.fullmatch(name):
        raise AnsibleFilterError(f"sssd_conf: domain: {name!r} is not a word of letters, digits and _ . -")
    return name


def _ini(sections: list[tuple[str, list[tuple[str, str]]]]) -> str:
    return MARK + "\n" + "".join(f"\n[{name}]\n" + "".join(f"{key} = {value}\n" for key, value in lines)
                                 for name, lines in sections)


def sssd_main_conf(domain: str) -> str:
    """sssd.conf: the responders (NSS, PAM) and the one domain, whose settings are in its conf.d snippet."""
    return _ini([("sssd", [("config_file_version", "2"), ("services", "nss, pam"), ("domains", _domain(domain))]),
                 ("nss", []), ("pam", [])])


def sssd_conf(settings: dict) -> str:
    """The domain's conf.d snippet: one LDAP domain (rfc2307: posixAccount, posixGroup) over TLS that must verify
    against the CA; a bound search when a bind DN is given; homes under the home base; ids below 1000 never taken from
    the directory."""
    domain = _domain(settings.get("domain"))
    uri = _value("ldap_uri", settings.get("uri"))
    scheme = _URI.fullmatch(uri)
    if scheme is None:
        raise AnsibleFilterError(f"sssd_conf: ldap_uri: {uri!r} is not ldap://HOST[:PORT] or ldaps://HOST[:PORT]")
    home_base = _value("override_homedir", settings.get("home_base"))
    if not home_base.startswith("/"):
        raise AnsibleFilterError(f"sssd_conf: override_homedir: {home_base!r} is not an absolute path")
    lines = [
        ("id_provider", "ldap"), ("auth_provider", "ldap"), ("chpass_provider", "none"), ("access_provider", "permit"),
        ("ldap_schema", "rfc2307"), ("ldap_uri", uri),
        ("ldap_search_base", _value("ldap_search_base", settings.get("base_dn"))),
        ("ldap_tls_cacert", _value("ldap_tls_cacert", settings.get("ca_file"))), ("ldap_tls_reqcert", "demand"),
    ]
    if scheme[1] == "ldap":  # plain LDAP: StartTLS before anything is sent, or no connection
        lines.append(("ldap_id_use_start_tls", "true"))
    if settings.get("bind_dn"):
        lines += [("ldap_default_bind_dn", _value("ldap_default_bind_dn", settings["bind_dn"])),
                  ("ldap_default_authtok_type", "password"),
                  ("ldap_default_authtok", bind_password(settings.get("password")))]
    lines += [("override_homedir", home_base.rstrip("/").replace("%", "%%") + "/%u"), ("min_id", "1000"),
              ("enumerate", "false"), ("cache_credentials", "false")]
    return _ini([(f"domain/{domain}", lines)])


def sssd_nsswitch(text: str, enabled: bool) -> str:
    """nsswitch.conf with `sss` last on the passwd, group and shadow lines (enabled: local files answer first, so a
    local user of the same name wins), or with `sss` on no line at all (disabled). Other lines stay as they are."""
    out, seen = [], set()
    for line in (text or "").splitlines():
        match = _NSS_LINE.fullmatch(line.strip()) if not line.lstrip().startswith("#") else None
        if match is None:
            out.append(line)
            continue
        db, sources = match["db"], match["sources"].split()
        seen.add(db)
        if enabled and db not in DATABASES:
            out.append(line)  # services, netgroup...: as the packages left them
            continue
        wanted = [s for s in sources if s != "sss"] + (["sss"] if enabled else [])
        out.append(line if wanted == sources else f"{db}:{match['gap'].split(':', 1)[1] or ' '}{' '.join(wanted)}")
    if enabled:
        out += [f"{db}: files sss" for db in DATABASES if db not in seen]
    return "\n".join(out) + "\n"


def _installed(probe: dict, name: str) -> bool:
    return bool(((probe.get("packages") or {}).get(name) or {}).get("installed"))


def sssd_plan(probe: dict, enabled: bool, packages: list) -> dict:
    """From the probe: the packages to install, the nsswitch.conf text, what PAM needs (enable, disable or nothing),
    whether to take back what the role did here (off, and its CA file is on the node), and whether sssd must start."""
    outputs, files = probe.get("outputs") or {}, probe.get("files") or {}
    ours = (files.get("ca") or {}).get("type") == "file"
    old = outputs.get("nsswitch") or ""
    if (enabled or ours) and not old.strip():
        raise AnsibleFilterError("sssd_plan: /etc/nsswitch.conf is missing or empty on the node; restore it (Debian: "
                                 "/usr/share/libc-bin/nsswitch.conf) before sss is added to it")
    new = sssd_nsswitch(old, enabled) if (enabled or ours) else old
    pam = outputs.get("pam") or ""
    has = ("pam_sss.so" in pam, MKHOMEDIR in pam)
    service = (probe.get("services") or {}).get("sssd") or {}
    running = service.get("active") == "active" and service.get("enabled") == "enabled"
    return {
        "missing": [name for name in packages if not _installed(probe, name)] if enabled else [],
        "nsswitch": new,
        "nsswitch_differs": new.rstrip("\n") != old.rstrip("\n"),  # the probe drops trailing newlines
        "pam": "enable" if enabled and not all(has) else "disable" if not enabled and ours and any(has) else "",
        "undo": not enabled and ours,
        "start": enabled and not running,
    }


class FilterModule:
    def filters(self):
        return {"sssd_main_conf": sssd_main_conf, "sssd_conf": sssd_conf, "sssd_nsswitch": sssd_nsswitch,
                "sssd_plan": sssd_plan}
