"""Start and stop one node: an overlay root, fresh namespaces inside its netns, a bash init running sshd."""
from __future__ import annotations

import socket
import time
from pathlib import Path

from provision.errors import SandboxError
from provision.providers.sandbox import processes, rootfs
from provision.providers.sandbox.record import NodeRecord, Proc

# Capabilities no node gets: the kernel and its clock are shared with this machine.
DROPPED_CAPABILITIES = "-sys_time,-sys_module"
STOP_GRACE_S = 5.0


def dirs(node: NodeRecord) -> dict[str, Path]:
    """The node's overlay upper and work directories and the mount point of its root."""
    base = Path(node.dir)
    return {"upper": base / "upper", "work": base / "work", "root": base / "root"}


def boot_argv(node: NodeRecord, lower: Path) -> list[str]:
    """Enter the node's netns, drop host-wide capabilities, unshare the rest, run the boot script."""
    paths = dirs(node)
    return ["nsenter", f"--net=/run/netns/{node.netns}", "--",
            "setpriv", "--bounding-set", DROPPED_CAPABILITIES, "--",
            "unshare", "--uts", "--mount", "--pid", "--ipc", "--fork", "--propagation", "private", "--",
            "/bin/bash", str(Path(node.dir) / "boot.sh"), str(lower), str(paths["upper"]), str(paths["work"]),
            str(paths["root"]), node.name, str(node.stand_in_gpus)]


def launch(node: NodeRecord, lower: Path) -> Proc:
    """Start the node's launcher (unshare, which waits for the node's init); record it before going on."""
    for path in dirs(node).values():
        path.mkdir(parents=True, exist_ok=True)
    (Path(node.dir) / "boot.sh").write_bytes(rootfs.packaged("boot.sh"))
    launcher = processes.spawn(boot_argv(node, lower), Path(node.dir) / "boot.log")
    if launcher is None:
        raise SandboxError(f"node {node.name}: the launcher exited at once; see {node.dir}/boot.log")
    return launcher


def find_init(node: NodeRecord, launcher: Proc, timeout: float = 10.0) -> Proc:
    """The node's PID 1 as the host sees it: the launcher's only child."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in processes.children(launcher.pid):
            init = processes.identify(pid)
            if init is not None:
                return init
        if not processes.running(launcher):
            break
        time.sleep(0.01)
    raise SandboxError(f"node {node.name} did not start: {boot_log_tail(node)}",
                       hint=f"full log: {node.dir}/boot.log")


def running(node: NodeRecord) -> bool:
    """Whether the node's init is alive (and is still the process we started)."""
    return processes.running(node.init)


def stop(nodes: list[NodeRecord]) -> list[str]:
    """Stop nodes (SIGTERM to init, which stops its services; SIGKILL after a grace); names that survived."""
    inits = [n.init for n in nodes if n.init is not None]
    left = processes.stop(inits, STOP_GRACE_S)
    launchers = [n.launcher for n in nodes if n.launcher is not None]
    processes.wait_gone(launchers, 5.0)
    return [n.name for n in nodes if n.init in left]


def wait_ssh(nodes: list[NodeRecord], timeout: float = 60.0) -> None:
    """Wait until every node accepts TCP connections on port 22; fail early if a node's init dies."""
    pending = list(nodes)
    deadline = time.monotonic() + timeout
    while pending:
        for node in list(pending):
            if _port_open(node.address, 22):
                pending.remove(node)
            elif not running(node):
                raise SandboxError(f"node {node.name} stopped while booting: {boot_log_tail(node)}",
                                   hint=f"see {node.dir}/boot.log and /var/log/sandbox-init.log in its upper layer")
        if pending and time.monotonic() > deadline:
            names = ", ".join(n.name for n in pending)
            raise SandboxError(f"sshd did not answer on port 22 within {timeout:.0f} s on: {names}",
                               hint=f"see {pending[0].dir}/upper/var/log/sandbox-init.log")
        if pending:
            time.sleep(0.05)


def _port_open(address: str, port: int) -> bool:
    """Whether a TCP connection to address:port succeeds right now."""
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


def boot_log_tail(node: NodeRecord) -> str:
    """The last lines the boot script wrote, for error messages."""
    try:
        lines = (Path(node.dir) / "boot.log").read_text().strip().splitlines()
    except OSError:
        return "no boot log"
    return " / ".join(lines[-3:]) or "boot log empty"


def exec_argv(node: NodeRecord, argv: list[str]) -> list[str]:
    """A command line that runs argv inside a running node (all its namespaces, its root, its limits)."""
    if not running(node) or node.init is None:
        raise SandboxError(f"node {node.name} is not running", hint="start it first (faults.start_node)")
    return ["nsenter", "-t", str(node.init.pid), "-a", "--", "/usr/bin/setpriv", "--bounding-set",
            DROPPED_CAPABILITIES, "--", "/usr/bin/env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:"
            "/usr/bin:/sbin:/bin", "LANG=C.UTF-8", *argv]
