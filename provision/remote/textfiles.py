"""Replace one of gpu-provision's textfiles in node exporter's directory on a node, from the control side.

Certify's and deploy's last results are series of the catalogue (provision.certify.probe.metrics.catalogue), written
as one file each (TEXTFILES) into TEXTFILE_DIR on the monitoring node, where node exporter serves them to Prometheus.
One SSH command per file, whatever the cluster's size: the file's text travels on the command's input, is written to
a hidden temporary file in the same directory (node exporter reads only `*.prom`), made 0644 and renamed over the
old file, so Prometheus never scrapes half a file.

The exposition text is the metrics package's (provision.certify.probe.metrics.textfile: catalogue-checked, escaped).
"""
from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

from provision.certify.probe.metrics.catalogue import TEXTFILE_DIR, TEXTFILES
from provision.certify.probe.metrics.textfile import Sample, render
from provision.errors import ProvisionError
from provision.records import ClusterInfo, NodeInfo
from provision.remote.commands import CommandResult, run_on

WRITE_TIMEOUT_S = 30.0


StdinRunner = Callable[..., CommandResult]  # run_on's shape: (cluster, node, command, timeout=, stdin=)


def write_command(writer: str, sudo: bool, folder: str = TEXTFILE_DIR) -> str:
    """The shell line that reads a file's text on stdin and puts it in place as TEXTFILES[writer], atomically."""
    folder, name = shlex.quote(folder), shlex.quote(TEXTFILES[writer])
    script = (f"set -e; umask 022; t=$(mktemp {folder}/.{name}.XXXXXX); trap 'rm -f \"$t\"' EXIT; cat > \"$t\"; "
              f"chmod 0644 \"$t\"; mv -f \"$t\" {folder}/{name}; trap - EXIT")
    return ("sudo -n " if sudo else "") + "sh -c " + shlex.quote(script)


def publish(cluster: ClusterInfo, node: NodeInfo, writer: str, samples: Sequence[Sample],
            run: StdinRunner = run_on) -> str | None:
    """Write the samples as TEXTFILES[writer] on `node` with one remote command; None when written, else why not
    (one line naming the node). Never raises for the node: a file not written is a note, not a failure."""
    text = render(list(samples)).encode()
    try:
        result = run(cluster, node, write_command(writer, cluster.ssh_user != "root"), timeout=WRITE_TIMEOUT_S,
                     stdin=text)
    except ProvisionError as exc:
        return f"{TEXTFILES[writer]} not written on {node.name}: {str(exc).removeprefix(node.name + ': ')}"
    except Exception as exc:  # the run it reports on is over: whatever stops the write is a note
        return f"{TEXTFILES[writer]} not written on {node.name}: {exc.__class__.__name__}: {exc}"
    if result.rc != 0:
        why = (result.stderr.strip().splitlines() or [f"exit {result.rc}"])[-1]
        return f"{TEXTFILES[writer]} not written on {node.name}: {why}"
    return None

