"""The iperf3 matrix's rounds through Slurm: one srun step per round across the compute nodes in it, so the control
machine opens no SSH session and starts no thread per node for the matrix (issue 35).

Every task of a round's step runs the same short bash program (`script`). A node the program's table names is a
client: it measures to its peer's address, forward and then reverse (`-R`), and prints each run's exit status and its
JSON on one line. Any other node of the step serves two one-off tests (`iperf3 -s -1`, twice) and prints nothing. The
table holds only the clients (one line each), so the program grows by about 30 bytes a node: about 60 KB at 4,000
nodes, under Linux's limit of 128 KiB for one argument.

A client starts as soon as its step does, and its peer's server may start a little later: a refused or failed
connection is tried again for CONNECT_WINDOW_S, and the reverse test (after the one-off server started again) for
REVERSE_WINDOW_S; when the forward test never connected, the reverse one is tried once. A server gives up when no
connection came in that window (plus SERVER_GRACE_S), and once connected, after one test's time. A broken link
therefore costs about CONNECT_WINDOW_S in each round it is in.

Nodes that cannot take a Slurm step (the controller, nodes of other roles, a partial run's peers in service, nodes
whose pre-checks failed) keep an iperf3 daemon started over SSH (control/network.py): a pair with one of them is
measured from the compute node's side, in the step, against that daemon.
"""
from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from provision.certify.control import srun

CONNECT_WINDOW_S = 10  # a client tries a refused connection again this long (its peer's server may start later)
REVERSE_WINDOW_S = 4  # ... and for the reverse test, after the one-off server started again
RETRY_PAUSE_S = 0.2
SERVER_GRACE_S = 2  # a server waits for its client's connection this much longer than the client tries
MARK = "certify-iperf3"  # a client's result line: MARK, the direction, iperf3's exit status, then its JSON
MARGIN_S = 15  # one test may take this long beyond its length (connect, the server's reply, the end of test)
# A round's step asks for this much memory a node: without --mem, Slurm gives a job all of a node's memory where
# memory is a consumable resource, and the rounds, one after the other, then kept certify's sbatch job pending.
MEMORY = "256M"


@dataclass(frozen=True)
class Client:
    """One client of a round: measures from `node` to `address`, forward and reverse."""

    node: str
    address: str


def script(port: int, seconds: int, bitrate: str | None, clients: list[Client]) -> str:
    """The bash program every task of the round runs (the node's name is $SLURMD_NODENAME)."""
    rate = f" -b {shlex.quote(bitrate)}" if bitrate else ""
    one_test = seconds + MARGIN_S
    table = "\n".join(f"  {shlex.quote(c.node)}) peer={shlex.quote(c.address)};;" for c in clients)
    return f"""set -u
measure() {{  # $1: forward or reverse; $2: how long a failed connection is tried again. Fails when it did not connect.
  local out rc end=$((SECONDS + $2)) flag= unconnected
  [ "$1" = reverse ] && flag=-R
  while :; do
    out=$(timeout {one_test} iperf3 -c "$peer" -p {int(port)} -t {int(seconds)} -J --connect-timeout 3000{rate} \
$flag 2>&1); rc=$?
    # iperf3 3.12 (Debian 12) exits 0 with -J even when it could not connect: its message decides
    case $out in *"unable to connect"*|*busy*|*refused*|*"unable to send"*|*"unable to receive"*) unconnected=1;;
      *) unconnected=;; esac
    [ -z "$unconnected" ] || [ $SECONDS -ge $end ] && break
    sleep {RETRY_PAUSE_S}
  done
  printf '%s %s %s ' {MARK} "$1" "$rc"; printf '%s' "$out" | tr -d '\n'; echo
  [ -z "$unconnected" ]
}}
serve() {{  # one one-off test; $1: how long to wait for the client's connection
  iperf3 -s -1 -p {int(port)} >/dev/null 2>&1 &
  local pid=$! end=$((SECONDS + $1)) seen=
  while kill -0 $pid 2>/dev/null; do
    if [ -z "$seen" ] && ss -Htn state established '( sport = :{int(port)} )' | grep -q .; then seen=1; end=$((SECONDS + {one_test})); fi
    [ $SECONDS -ge $end ] && {{ kill $pid 2>/dev/null; wait $pid; return 1; }}
    sleep {RETRY_PAUSE_S}
  done
  wait $pid
}}
peer=
case $SLURMD_NODENAME in
{table}
esac
if [ -n "$peer" ]; then
  if measure forward {CONNECT_WINDOW_S}; then measure reverse {REVERSE_WINDOW_S}; else measure reverse 0; fi
else
  serve {CONNECT_WINDOW_S + SERVER_GRACE_S} && serve {REVERSE_WINDOW_S + SERVER_GRACE_S}
fi
exit 0
"""


def timeout_s(seconds: int) -> int:
    """How long a round's step may take: both tests with their windows, and the step's own start."""
    return CONNECT_WINDOW_S + REVERSE_WINDOW_S + 2 * (seconds + MARGIN_S) + 30


def step(nodes: list[str], clients: list[Client], port: int, seconds: int, bitrate: str | None,
         job_name: str) -> srun.Step:
    """The round's srun step: one task on each of `nodes` (the clients and the servers among them)."""
    program = script(port, seconds, bitrate, clients)
    return srun.Step(tuple(nodes), "bash -c " + shlex.quote(program), job_name, timeout_s(seconds),
                     extra=(f"--mem={MEMORY}",))


def results(text: str) -> dict[str, tuple[int, str]]:
    """A client's output -> {"forward": (exit status, iperf3's JSON), "reverse": ...}; a direction it did not
    print is missing."""
    out: dict[str, tuple[int, str]] = {}
    for line in text.splitlines():
        parts = line.split(" ", 3)
        if len(parts) >= 3 and parts[0] == MARK and parts[1] in ("forward", "reverse") and parts[2].isdigit():
            out[parts[1]] = (int(parts[2]), parts[3] if len(parts) == 4 else "")
    return out


def orient(pair: tuple[str, str], in_slurm: Mapping[str, bool]) -> tuple[str, str]:
    """(client, server): a pair with one node that takes steps is measured from that node's side."""
    a, b = pair
    return (b, a) if not in_slurm.get(a) and in_slurm.get(b) else (a, b)
