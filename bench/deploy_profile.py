"""Where a deploy spends its time: per role and per task, from ansible-runner's event timings, and how much CPU
the controller (Ansible) used against the rest of the machine (the nodes: apt/dpkg, modules, daemons).

Run as root:
    .venv/bin/python bench/deploy_profile.py [--nodes 4] [--top 10]   # cold up, re-run, down; profile of both
    .venv/bin/python bench/deploy_profile.py --runs DIR [DIR ...]      # profile existing runs (a run's directory
                                                                       # under <state>/clusters/<name>/runs/)
The cluster is the one bench/deploy_scale.py uses (dbench<N>, 10.93.<N>.0/24), so both share its apt cache.
Compare figures only from one quiet machine.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

SPEC = """\
name: dbench{nodes}
provider: {{type: sandbox, subnet: 10.93.{octet}.0/24, os: {os}}}
node_groups:
  - {{name: ctl, roles: [controller], count: 1}}
  - {{name: cn, roles: [compute, storage], count: {compute}}}
filesystem: {{type: {filesystem}, replica: 2}}
"""
DEFAULT_OS = "debian-13"
RESULTS = {"runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable"}
PACKAGE_ACTIONS = {"apt", "package", "dpkg_selections", "apt_repository"}
# Actions that run in Ansible on the controller only (no connection to the node).
LOCAL_ACTIONS = {"assert", "debug", "set_fact", "meta", "include_tasks", "import_tasks", "include_role",
                 "import_role", "include_vars", "fail", "group_by", "add_host"}


@dataclass
class TaskTime:
    """One task of a run: its wall time (first start to last host's end) and host-seconds per outcome."""

    name: str
    role: str
    action: str
    wall: float = 0.0
    host_seconds: float = 0.0
    executed: int = 0  # hosts where it ran (not skipped)
    skipped: int = 0


@dataclass
class Profile:
    """A run's tasks in order, with the run's wall time and per-host step counts."""

    tasks: list[TaskTime] = field(default_factory=list)
    wall: float = 0.0
    steps: Counter = field(default_factory=Counter)  # host -> tasks executed there
    remote: Counter = field(default_factory=Counter)  # host -> of those, tasks that reached the node
    skips: Counter = field(default_factory=Counter)  # host -> tasks skipped there


@dataclass
class Cpu:
    """CPU seconds over one command: the controller's process tree and the whole machine."""

    wall: float
    controller: float
    machine: float

    @property
    def rest(self) -> float:
        """Everything that is not the controller's process tree: nodes (modules, apt/dpkg, daemons), sshd, proxy."""
        return max(0.0, self.machine - self.controller)


def _seconds(stamp: str) -> float:
    """An ISO timestamp from ansible-runner as epoch seconds."""
    from datetime import datetime
    return datetime.fromisoformat(stamp).timestamp()


def load_events(run_dir: Path) -> list[dict]:
    """Every job event of a run directory (or of an artifacts directory), in order."""
    found = sorted(run_dir.rglob("job_events/*.json"), key=lambda p: int(p.name.split("-", 1)[0]))
    return [json.loads(p.read_text()) for p in found]


def profile(events: list[dict]) -> Profile:
    """Per-task wall time and host-seconds, from task-start events and the per-host results' start/end.

    A handler starts once per flush that runs it: each start opens a new span, and the task's wall time is the sum
    of its spans (from the start event to the last host's end)."""
    result, by_uuid = Profile(), {}
    starts: dict[str, float] = {}
    spans: dict[str, float] = {}  # the open span's wall time so far, per task
    first = last = None
    for event in events:
        data, kind = event.get("event_data", {}), event.get("event")
        created = _seconds(event["created"]) if event.get("created") else None
        if created is not None:
            first = created if first is None else min(first, created)
            last = created if last is None else max(last, created)
        if kind in ("playbook_on_task_start", "playbook_on_handler_task_start"):
            uuid = data.get("task_uuid", "")
            if uuid not in by_uuid:
                by_uuid[uuid] = TaskTime(data.get("task", ""), data.get("role", "") or "(play)",
                                         data.get("task_action", ""))
                result.tasks.append(by_uuid[uuid])
            by_uuid[uuid].wall += spans.pop(uuid, 0.0)
            starts[uuid] = created or 0.0
        elif kind in RESULTS and data.get("task_uuid") in by_uuid:
            task = by_uuid[data["task_uuid"]]
            host = data.get("host", "")
            if kind == "runner_on_skipped":
                task.skipped += 1
                result.skips[host] += 1
            else:
                task.executed += 1
                result.steps[host] += 1
                result.remote[host] += task.action.split(".")[-1] not in LOCAL_ACTIONS
            task.host_seconds += float(data.get("duration") or 0.0)
            if data.get("end"):
                uuid = data["task_uuid"]
                spans[uuid] = max(spans.get(uuid, 0.0), _seconds(data["end"]) - starts[uuid])
    for uuid, span in spans.items():
        by_uuid[uuid].wall += span
    result.wall = (last - first) if first is not None else 0.0
    return result


def by_role(prof: Profile) -> list[tuple[str, float, int]]:
    """(role, wall seconds, tasks) summed over the run, slowest first."""
    wall: dict[str, float] = defaultdict(float)
    count: Counter = Counter()
    for task in prof.tasks:
        wall[task.role] += task.wall
        count[task.role] += 1
    return sorted(((r, wall[r], count[r]) for r in wall), key=lambda x: -x[1])


def report(title: str, prof: Profile, top: int, cpu: Cpu | None = None) -> str:
    """The profile as text: totals, CPU split, roles, the top tasks by wall time."""
    hosts = sorted(prof.steps) or sorted(prof.skips)
    package = sum(t.host_seconds for t in prof.tasks if t.action.split(".")[-1] in PACKAGE_ACTIONS)
    every = sum(t.host_seconds for t in prof.tasks)
    lines = [f"== {title}: {prof.wall:.1f} s of Ansible events, {len(prof.tasks)} tasks, {len(hosts)} hosts; "
             f"per host: {_span(prof.steps, hosts)} tasks ran ({_span(prof.remote, hosts)} on the node), "
             f"{_span(prof.skips, hosts)} skipped",
             f"   host-seconds in tasks: {every:.1f}, of which package tasks (apt on the nodes) {package:.1f}"]
    if cpu:
        lines.append(f"   CPU: command {cpu.wall:.1f} s wall; controller (CLI + Ansible) {cpu.controller:.1f} s, "
                     f"nodes and the rest (apt/dpkg, modules, sshd, proxy) {cpu.rest:.1f} s, "
                     f"machine {cpu.machine:.1f} s of {cpu.wall * (os.cpu_count() or 1):.1f} available")
    lines.append("   roles (wall s, tasks): " + ", ".join(f"{r} {w:.1f} ({n})" for r, w, n in by_role(prof)))
    lines.append(f"   top {top} tasks by wall time:")
    for task in sorted(prof.tasks, key=lambda t: -t.wall)[:top]:
        lines.append(f"   {task.wall:6.1f} s  {task.host_seconds:6.1f} host-s  ran {task.executed:>2} "
                     f"skip {task.skipped:>2}  {task.role}: {task.name}")
    return "\n".join(lines)


def _span(counts: Counter, hosts: list[str]) -> str:
    """The lowest and highest count over the hosts, as "a-b" (or "a" when they agree)."""
    low, high = min((counts[h] for h in hosts), default=0), max((counts[h] for h in hosts), default=0)
    return f"{low}" if low == high else f"{low}-{high}"


def _machine_jiffies() -> int:
    """Busy CPU time of the whole machine so far, in clock ticks (everything but idle and iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(fields) - fields[3] - fields[4]


def timed_cli(*args: str) -> tuple[Cpu, subprocess.CompletedProcess]:
    """Run the CLI, with its wall time, its process tree's CPU and the machine's CPU over the same span."""
    ticks = os.sysconf("SC_CLK_TCK")
    before, start = _machine_jiffies(), time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen([sys.executable, "-m", "provision", *args], stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(process.args, process.returncode, out.read(), err.read())
    cpu = Cpu(wall, usage.ru_utime + usage.ru_stime, (_machine_jiffies() - before) / ticks)
    return cpu, done


def last_deploy_run(spec: Path) -> Path:
    """The artifacts directory of the cluster's last deploy (recorded in its state; the bench's specs name no
    state_dir, so the cluster lives under the default state root)."""
    from provision.state import ClusterState, state_root
    return Path(ClusterState(state_root(), spec.stem).read("deploy")["artifacts_dir"])


def measure(nodes: int, top: int, filesystem: str = "none") -> None:
    """Cold up (no certify), a re-run deploy, down; the profile of both deploys."""
    spec = Path(tempfile.mkdtemp()) / f"dbench{nodes}.yaml"
    compute = nodes - 1 if filesystem == "none" or (nodes - 1) % 2 == 0 else nodes - 2
    spec.write_text(SPEC.format(nodes=nodes, octet=nodes, compute=compute, filesystem=filesystem, os=DEFAULT_OS))
    timed_cli("down", str(spec))
    try:
        cpu, result = timed_cli("up", str(spec), "--skip-certify", "--quiet")
        if result.returncode != 0:
            print(f"cold up failed:\n{result.stderr[-2000:]}")
            return
        print(report(f"{compute + 1} nodes, cold up", profile(load_events(last_deploy_run(spec))), top, cpu))
        cpu, result = timed_cli("deploy", str(spec), "--json")
        changed = sum(h["changed"] for h in json.loads(result.stdout)["hosts"]) if result.stdout else "?"
        print(report(f"{compute + 1} nodes, re-run deploy (changed={changed})",
                     profile(load_events(last_deploy_run(spec))), top, cpu))
    finally:
        cpu, _ = timed_cli("down", str(spec))
        print(f"{compute + 1} nodes: down {cpu.wall:.1f} s")


def main() -> None:
    """Profile a fresh cluster, or runs that already exist."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--filesystem", default="none", choices=["none", "glusterfs"])
    parser.add_argument("--runs", type=Path, nargs="+", help="profile these run directories instead")
    args = parser.parse_args()
    if args.runs:
        for run in args.runs:
            print(report(str(run), profile(load_events(run)), args.top))
        return
    measure(args.nodes, args.top, args.filesystem)


if __name__ == "__main__":
    main()
