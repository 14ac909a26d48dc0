"""`provision ssh`: a shell (or one command) on a node through the system ssh, as `pcluster ssh` and `sky ssh` do."""
from __future__ import annotations

import os
import sys

from provision.cli.options import NodeArg, SpecArg, SshCommandArg
from provision.errors import StateError


def ssh(spec: SpecArg, node: NodeArg, command: SshCommandArg = None) -> None:
    """Open a shell on a node with the system ssh: the cluster's key, host keys checked against the cluster's
    known_hosts, the spec's user and port, the provider's jump host. A command after -- runs instead of the shell
    (provision ssh SPEC compute01 -- uptime); ssh's exit status is the command's."""
    # The library is imported when the command runs, not when the CLI starts (tests/unit/cli/test_startup.py).
    from provision.cluster import lifecycle
    from provision.remote import login
    from provision.spec.loader import load_spec

    argv = login.ssh_argv(lifecycle.current_cluster(load_spec(spec)), node, command or [])
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        raise StateError(f"cannot run {argv[0]}: {exc.strerror}",
                         hint="install the OpenSSH client (apt install openssh-client)") from None
