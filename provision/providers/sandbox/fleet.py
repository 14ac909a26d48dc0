"""Boot and halt several recorded nodes at once, writing every new process to the record first."""
from __future__ import annotations

from pathlib import Path

from provision.errors import SandboxError
from provision.providers.sandbox import node, processes, record
from provision.providers.sandbox.record import SandboxRecord
from provision.records import Progress, silent
from provision.state import ClusterState


def boot(state: ClusterState, rec: SandboxRecord, names: list[str], progress: Progress = silent,
         ssh_timeout: float = 60.0) -> None:
    """Start the named nodes that are not running and wait until each answers on port 22."""
    if rec.base is None or not Path(rec.base).is_dir():
        raise SandboxError(f"the base image {rec.base} of cluster {rec.cluster} is missing",
                           hint="run `provision up` again to rebuild it")
    todo = [rec.nodes[n] for n in names if not node.running(rec.nodes[n])]
    for item in todo:
        item.init, item.namespaces = None, {}
        item.launcher = node.launch(item, Path(rec.base))
        record.save(state, rec)
    for item in todo:
        assert item.launcher is not None
        item.init = node.find_init(item, item.launcher)
        item.namespaces = processes.namespaces(item.init.pid)
        record.save(state, rec)
    if todo:
        progress(f"started {len(todo)} node(s); waiting for sshd")
    node.wait_ssh([rec.nodes[n] for n in names], ssh_timeout)


def halt(state: ClusterState, rec: SandboxRecord, names: list[str]) -> list[str]:
    """Stop the named nodes; forget the processes that are gone; return the names that would not stop."""
    targets = [rec.nodes[n] for n in names if n in rec.nodes]
    survivors = node.stop(targets)
    for item in targets:
        if item.name not in survivors:
            item.init = None
    record.save(state, rec)
    return survivors
