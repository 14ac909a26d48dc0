"""What the certify role ships: the node-side package, found by walking it (it runs alone), a digest, the wheel."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from provision.certify import bundle

REPO = Path(__file__).resolve().parents[3]
ISOLATED = """
import json, runpy, sys
sys.path.insert(0, sys.argv[1])
sys.argv = ["probe", "--level", "quick", "--expect-json", sys.argv[2]]
try:
    runpy.run_module("provision.certify.probe", run_name="__main__")
except SystemExit as exc:
    code = exc.code
mods = sorted(m.__file__ for n, m in sys.modules.items() if n.split(".")[0] == "provision")
print(json.dumps({"modules": mods}))
"""


def test_the_staged_probe_runs_alone_and_imports_nothing_else(tmp_path):
    staged = bundle.stage_probe(tmp_path / "probe")
    mount = tmp_path / "shared"
    mount.mkdir()
    expect = json.dumps({"node": "n1", "fs_mount": str(mount), "fs_size_mib": 1, "run_id": "r1"})
    done = subprocess.run([sys.executable, "-I", "-c", ISOLATED, str(staged), expect], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    doc_line, modules_line = done.stdout.strip().splitlines()[-2:]
    doc = json.loads(doc_line)
    assert doc["mode"] == "probe" and doc["node"] == "n1"
    assert all(path.startswith(str(staged)) for path in json.loads(modules_line)["modules"])


def test_the_bundle_is_the_node_package_and_holds_everything_the_probe_imports():
    code = ("import sys, provision.certify.probe.__main__; "
            "print('\\n'.join(sorted(n for n in sys.modules if n.split('.')[0] == 'provision')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    shipped = bundle.probe_modules()
    assert set(done.stdout.split()) <= set(shipped)
    assert all(n in ("provision", "provision.certify") or n.startswith(bundle.NODE_PACKAGE) for n in shipped)
    on_disk = {p for p in (bundle.package_root() / "certify" / "probe").rglob("*.py")}
    assert {bundle.package_root() / bundle.module_file(n) for n in shipped} >= on_disk


def test_staging_is_stable_so_the_role_copies_nothing_the_second_time(tmp_path):
    first = bundle.stage_probe(tmp_path)
    stamps = {p: p.stat().st_mtime_ns for p in first.rglob("*") if p.is_file()}
    bundle.stage_probe(tmp_path)
    assert {p: p.stat().st_mtime_ns for p in first.rglob("*") if p.is_file()} == stamps
    assert (tmp_path / bundle.DIGEST_FILE).read_text().strip() == bundle.digest()
    assert not list(tmp_path.rglob("__pycache__"))


def test_the_digest_changes_with_the_code(tmp_path, monkeypatch):
    before = bundle.digest()
    fake = tmp_path / "provision"
    for name in bundle.probe_modules():
        target = fake / bundle.module_file(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((bundle.package_root() / bundle.module_file(name)).read_bytes())
    monkeypatch.setattr(bundle, "package_root", lambda: fake)
    assert bundle.digest() == before
    (fake / "certify" / "probe" / "records.py").write_text("# changed\n")
    assert bundle.digest() != before


def test_a_cached_wheel_is_used_without_downloading(tmp_path, monkeypatch):
    wheel = tmp_path / "wheels" / bundle.wheel_name("12.535.1")
    wheel.parent.mkdir()
    wheel.write_bytes(b"PK")
    monkeypatch.setattr(bundle.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("pip ran")))
    assert bundle.ensure_wheel(tmp_path / "wheels", "12.535.1") == (wheel, False)


def test_prepare_with_a_given_wheel_reports_its_version(tmp_path, capsys):
    wheel = tmp_path / bundle.wheel_name("12.535.1")
    wheel.write_bytes(b"PK")
    assert bundle.main([str(tmp_path / "cache"), "--wheel", str(wheel)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["nvml_version"] == "12.535.1" and doc["downloaded"] is False
    assert Path(doc["source_dir"], "gpubench.cu").is_file()
    assert bundle.main([str(tmp_path / "cache"), "--wheel", str(tmp_path / "absent.whl")]) == 1
    assert "certify_nvml_wheel" in capsys.readouterr().err


def test_site_playbook_installs_the_certify_archive_on_every_node_after_the_software_and_before_the_monitoring():
    """The probe reads what every other role installed; the monitoring (its Slurm collector comes in the archive) is
    the only play after it."""
    plays = yaml.safe_load((REPO / "playbooks" / "site.yml").read_text())
    certify, monitoring = plays[-2], plays[-1]
    assert certify["hosts"] == "all" and certify["roles"] == [{"role": "certify", "tags": ["certify"]}]
    assert monitoring["hosts"] == "all" and monitoring["roles"] == [{"role": "monitoring", "tags": ["monitoring"]}]


def test_role_variables_carry_the_role_prefix_and_the_launcher_matches_the_runner():
    from provision.certify.control import run

    role = REPO / "playbooks" / "roles" / "certify"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    assert all(name.startswith("certify_") for name in defaults)
    assert run.PROBE == f"{defaults['certify_prefix']}/bin/certify-probe"
    assert run.GPUBENCH == f"{defaults['certify_prefix']}/bin/gpubench"


def test_probe_archive_is_reproducible_and_rewritten_only_on_change(tmp_path):
    import os
    import tarfile

    from provision.certify import bundle

    probe = bundle.stage_probe(tmp_path / "probe")
    first = bundle.pack(probe, tmp_path / "probe.tar").read_bytes()
    os.utime(tmp_path / "probe.tar", (1, 1))
    assert bundle.pack(probe, tmp_path / "probe.tar").read_bytes() == first
    assert (tmp_path / "probe.tar").stat().st_mtime == 1  # unchanged content: the file is not rewritten
    with tarfile.open(tmp_path / "probe.tar") as tar:
        names = tar.getnames()
        assert names == sorted(names) and all(m.mtime == 0 and m.uid == 0 for m in tar.getmembers())
    (probe / "provision" / "extra.py").write_text("x = 1\n")
    assert bundle.pack(probe, tmp_path / "probe.tar").read_bytes() != first
