"""False alarms and detection of certify quick on a healthy sandbox cluster while this machine is loaded.

Run as root: .venv/bin/python bench/false_alarms.py [--runs 20] [--fault-runs 3] [--keep]
(the python that runs it, and ansible-playbook beside it, must import this checkout's provision: the certify role
stages the probe from there, and certify refuses nodes whose probe differs from its own)

The cluster `fa` (subnet 10.91.0.0/24: one controller, three compute nodes of which two serve a replica-2
GlusterFS volume on /shared, health program off) is brought up without certify, or reused when it is already up.
While certify runs, this script keeps a background load it started itself: one CPU-bound Python process per core
(a busy loop) and one disk writer (64 MiB written and fsync'd in a loop under /var/tmp); their PIDs are printed and
each is stopped by its PID at the end.

False alarms: `provision certify SPEC --json --level quick` RUNS times on the healthy cluster; per check id, the
runs in which some node (or the cluster) failed it, and the runs in which it warned. Any fail here is a false alarm.
Detection: each fault below is put in place, certify runs FAULT_RUNS times, the fault is undone and the cluster is
waited on until it is healthy again; the figure is the fraction of runs in which the expected node failed the
expected check. The Markdown table is printed and everything is written to build/bench/false_alarms.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

SPEC = """\
name: fa
provider: {type: sandbox, subnet: 10.91.0.0/24}
node_groups:
  - {name: ctl, roles: [controller], count: 1}
  - {name: node, roles: [compute], count: 1, partition: batch, default_partition: true}
  - {name: store, roles: [compute, storage], count: 2, partition: batch}
filesystem: {type: glusterfs, mount_point: /shared, replica: 2}
health: {enabled: false}
"""
COMPUTE = ("node01", "store01", "store02")
OUT = Path("build/bench/false_alarms.json")
CPU_LOAD = "while True: pass"
DISK_LOAD = """\
import os, sys
block = os.urandom(1 << 20)
while True:
    with open(sys.argv[1], "wb") as out:
        for _ in range(64):
            out.write(block)
        out.flush()
        os.fsync(out.fileno())
"""
LOAD_DESCRIPTION = ("{cpus} CPU-bound Python processes (one per core, `while True: pass`, nice 0) and one disk "
                    "writer (64 MiB written and fsync'd in a loop under /var/tmp)")


@dataclass(frozen=True)
class Fault:
    """A fault the bench puts in place and undoes, and the (node, check) certify must fail while it is there."""

    name: str
    node: str
    check: str
    inject: Callable[[Path], None]
    undo: Callable[[Path], None]


def tally(docs: Iterable[dict]) -> dict[str, dict[str, int]]:
    """Per check id: in how many runs it failed (any node or the cluster) and in how many it warned (and failed
    nowhere); checks that never failed nor warned are left out."""
    out: dict[str, dict[str, int]] = {}
    for doc in docs:
        verdicts: dict[str, set[str]] = {}
        for check in all_checks(doc):
            verdicts.setdefault(check["check"], set()).add(check["verdict"])
        for check, seen in verdicts.items():
            kind = "fail" if "fail" in seen else "warn" if "warn" in seen else None
            if kind:
                out.setdefault(check, {"fail": 0, "warn": 0})[kind] += 1
    return dict(sorted(out.items()))


def all_checks(doc: dict) -> list[dict]:
    """Every check of a report.json document: the nodes' and the cluster's."""
    return [c for n in doc.get("nodes", []) for c in n["checks"]] + list(doc.get("checks", []))


def detected(doc: dict, node: str, check: str) -> bool:
    """Whether the run failed `check` on `node`."""
    return any(c["check"] == check and c.get("node") == node and c["verdict"] == "fail" for c in all_checks(doc))


def alarm_lines(doc: dict) -> list[str]:
    """One line per fail or warn of a run, for the log."""
    return [f"{c['verdict']} {c.get('node') or c.get('subject') or 'cluster'} {c['check']}: {c.get('detail', '')}"
            for c in all_checks(doc) if c["verdict"] in ("fail", "warn")]


def markdown(runs: int, alarms: dict[str, dict[str, int]], detection: list[dict], load: str) -> str:
    """The figures as Markdown: false alarms per check, then detection per fault."""
    lines = [f"Healthy cluster, certify quick, {runs} runs; load: {load}", "",
             "| check | runs with a fail (false alarm) | runs with a warning |", "|---|---|---|"]
    lines += [f"| `{check}` | {n['fail']}/{runs} | {n['warn']}/{runs} |" for check, n in alarms.items()]
    if not alarms:
        lines.append(f"| every check | 0/{runs} | 0/{runs} |")
    lines += ["", "| injected fault | expected fail | detected |", "|---|---|---|"]
    lines += [f"| {d['fault']} | `{d['check']}` on {d['node']} | {d['detected']}/{d['runs']} |" for d in detection]
    return "\n".join(lines)


def provision(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess."""
    return subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True,
                          timeout=timeout)


def certify(spec: Path) -> dict:
    """One `certify --json --level quick`; the report document, or (certify printed none) a document whose one
    cluster check `certify.run` fails with the end of its stderr: a run that ends without a report is an alarm too."""
    try:
        result = provision("certify", str(spec), "--json", "--level", "quick", timeout=900)
    except subprocess.TimeoutExpired:
        return crashed("no report after 900 s")
    if not result.stdout.strip():
        return crashed(f"no report (exit {result.returncode}): {result.stderr.strip()[-500:]}")
    return json.loads(result.stdout)


def crashed(why: str) -> dict:
    """The stand-in document of a certify run that gave no report."""
    return {"verdict": "fail", "nodes": [], "checks": [{"check": "certify.run", "verdict": "fail", "node": None,
                                                         "detail": why}]}


def on_node(spec: Path, node: str, command: str) -> subprocess.CompletedProcess:
    """A shell command on one node over SSH (`provision exec`)."""
    return provision("exec", str(spec), "-n", node, "--timeout", "120", "--", command, timeout=180)


def wait_healthy(spec: Path, timeout: float = 300) -> None:
    """Every compute node idle in Slurm with slurmd running and /shared mounted (else RuntimeError)."""
    deadline = time.monotonic() + timeout
    states = ""
    while time.monotonic() < deadline:
        states = on_node(spec, "ctl01", "sinfo -h -N -o '%N %T'").stdout
        table = dict(line.split()[:2] for line in states.splitlines() if len(line.split()) >= 2)
        if all(table.get(n) == "idle" for n in COMPUTE) and all(
                on_node(spec, n, "systemctl is-active slurmd && findmnt -n /shared").returncode == 0
                for n in COMPUTE):
            return
        time.sleep(3)
    raise RuntimeError(f"cluster not healthy after {timeout:.0f} s:\n{states}")


def faults(spec: Path) -> list[Fault]:
    """The injected faults: a link shaped to 20 Mbit/s, slurmd stopped, the shared filesystem unmounted."""
    from provision.providers.sandbox import faults as sandbox

    def resume(node: str) -> None:
        on_node(spec, "ctl01", f"scontrol update nodename={node} state=resume")

    return [
        Fault("node01's link shaped to 20 Mbit/s both ways", "node01", "net.node_bw",
              lambda root: sandbox.slow_link(root, "fa", "node01", rate="20mbit"),
              lambda root: sandbox.restore_link(root, "fa", "node01")),
        Fault("slurmd stopped on store02", "store02", "slurm.slurmd",
              lambda root: sandbox.stop_service(root, "fa", "store02", "slurmd"),
              lambda root: (on_node(spec, "store02", "systemctl start slurmd"), time.sleep(5), resume("store02"))),
        Fault("/shared unmounted on store01", "store01", "fs.mount",
              lambda root: on_node(spec, "store01", "umount -l /shared"),
              lambda root: on_node(spec, "store01", "findmnt -n /shared >/dev/null || mount /shared")),
    ]


def start_load() -> list[subprocess.Popen]:
    """The background load: one busy loop per core and one disk writer; their PIDs are printed."""
    cpus = os.cpu_count() or 1
    target = Path(tempfile.mkdtemp(prefix="fa-load-", dir="/var/tmp")) / "blob"
    procs = [subprocess.Popen([sys.executable, "-c", CPU_LOAD]) for _ in range(cpus)]
    procs.append(subprocess.Popen([sys.executable, "-c", DISK_LOAD, str(target)]))
    print(f"background load: {LOAD_DESCRIPTION.format(cpus=cpus)}; PIDs {' '.join(str(p.pid) for p in procs)}; "
          f"writing {target}", flush=True)
    return procs


def stop_load(procs: list[subprocess.Popen]) -> None:
    """Stop each load process by its PID and remove the writer's file."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for folder in Path("/var/tmp").glob("fa-load-*"):
        for item in folder.iterdir():
            item.unlink()
        folder.rmdir()


def bring_up(spec: Path) -> None:
    """Reuse the cluster when it is up and healthy; else bring it up (no certify)."""
    try:
        wait_healthy(spec, timeout=10)
        print("cluster fa already up and healthy: reused", flush=True)
        return
    except (RuntimeError, subprocess.TimeoutExpired):
        pass
    started = time.perf_counter()
    result = provision("up", str(spec), "--skip-certify", "--quiet", timeout=1800)
    if result.returncode != 0:
        raise RuntimeError(f"up failed: {result.stderr[-3000:]}")
    wait_healthy(spec)
    print(f"cluster fa up in {time.perf_counter() - started:.0f} s", flush=True)


def healthy_runs(spec: Path, runs: int, log: list[dict]) -> list[dict]:
    """certify RUNS times on the healthy cluster; each run's alarms printed."""
    docs = []
    for index in range(1, runs + 1):
        doc = certify(spec)
        docs.append(doc)
        found = alarm_lines(doc)
        log.append({"phase": "healthy", "run": index, "verdict": doc["verdict"], "alarms": found})
        print(f"healthy run {index}/{runs}: {doc['verdict']}" + "".join(f"\n  {line}" for line in found), flush=True)
        if any(c["check"] == "probe.installed" and c["verdict"] == "fail" for c in all_checks(doc)):
            raise RuntimeError("the nodes run another probe than this code: the certify role staged the probe of the "
                               "gpu-provision that ansible-playbook's python imports (PYTHONPATH does not reach it); "
                               "run the bench with a python whose own sys.path holds this checkout")
    return docs


def fault_runs(spec: Path, root: Path, fault: Fault, runs: int, log: list[dict]) -> dict:
    """certify RUNS times with the fault in place, then undo it and wait until the cluster is healthy."""
    hits = 0
    fault.inject(root)
    try:
        for index in range(1, runs + 1):
            doc = certify(spec)
            hit = detected(doc, fault.node, fault.check)
            hits += hit
            log.append({"phase": fault.name, "run": index, "verdict": doc["verdict"], "detected": hit,
                        "alarms": alarm_lines(doc)})
            print(f"{fault.name}, run {index}/{runs}: {'detected' if hit else 'NOT detected'}", flush=True)
    finally:
        fault.undo(root)
        wait_healthy(spec)
    return {"fault": fault.name, "node": fault.node, "check": fault.check, "runs": runs, "detected": hits}


def main() -> None:
    """Parse arguments, bring the cluster up, run the healthy and the faulty rounds under load, print the table."""
    from provision.spec.loader import load_spec
    from provision.state import ClusterState

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="certify runs on the healthy cluster")
    parser.add_argument("--fault-runs", type=int, default=3, help="certify runs per injected fault")
    parser.add_argument("--keep", action="store_true", help="leave the cluster up")
    args = parser.parse_args()
    spec = Path(tempfile.mkdtemp()) / "fa.yaml"
    spec.write_text(SPEC)
    root = ClusterState.for_spec(load_spec(spec)).root
    bring_up(spec)
    log: list[dict] = []
    load = LOAD_DESCRIPTION.format(cpus=os.cpu_count() or 1)
    procs = start_load()
    started = time.perf_counter()
    try:
        docs = healthy_runs(spec, args.runs, log)
        detection = [fault_runs(spec, root, f, args.fault_runs, log) for f in faults(spec)] if args.fault_runs else []
    finally:
        stop_load(procs)
        if not args.keep:
            provision("down", str(spec), timeout=600)
    alarms = tally(docs)
    table = markdown(args.runs, alarms, detection, load)
    print(table)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"runs": args.runs, "fault_runs": args.fault_runs, "load": load,
                               "seconds": round(time.perf_counter() - started), "false_alarms": alarms,
                               "detection": detection, "log": log, "table": table}, indent=2))
    print(f"written to {OUT}")


if __name__ == "__main__":
    main()
