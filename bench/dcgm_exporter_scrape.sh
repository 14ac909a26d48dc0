#!/usr/bin/env bash
# On a GPU node with NVIDIA's DCGM exporter (package datacenter-gpu-manager-exporter), from the repository root, as
# root: start the exporter with the dcgm role's counters file, scrape it once, and check that every DCGM name of
# provision/certify/probe/metrics/catalogue.py is served. Uses the running host engine (nvidia-dcgm, port 5555)
# when there is one, as the role's drop-in does, else the exporter's embedded one.
# Usage: bash bench/dcgm_exporter_scrape.sh   (exit 0 when every name is served; the scrape lands in $OUT)
set -u
OUT=${OUT:-/tmp/dcgm-exporter-scrape}
PORT=${PORT:-9400}
COUNTERS=playbooks/roles/dcgm/files/dcgm-exporter-counters.csv
mkdir -p "$OUT"
command -v dcgm-exporter >/dev/null || { echo "no dcgm-exporter on PATH: install datacenter-gpu-manager-exporter"; exit 2; }
dcgm-exporter --version 2>&1 | head -3
if curl -s -o /dev/null "http://localhost:$PORT/metrics"; then echo "something already serves port $PORT"; exit 2; fi
remote=()
if (exec 3<>/dev/tcp/127.0.0.1/5555) 2>/dev/null; then remote=(-r 127.0.0.1:5555); fi
dcgm-exporter -f "$COUNTERS" -a "localhost:$PORT" -c 1000 "${remote[@]}" >"$OUT/exporter.log" 2>&1 &
exporter=$!
trap 'kill "$exporter" 2>/dev/null' EXIT
for _ in $(seq 60); do  # the first collection comes after the host engine has watched the fields once
    if curl -s "http://localhost:$PORT/metrics" >"$OUT/metrics.txt" && grep -q '^DCGM_FI_' "$OUT/metrics.txt"; then
        break
    fi
    sleep 1
done
sleep 3 && curl -s "http://localhost:$PORT/metrics" >"$OUT/metrics.txt"
PYTHONPATH=. python3 - "$OUT/metrics.txt" <<'PY'
import sys
from provision.certify.probe.metrics.catalogue import DCGM
served = {line.split("{")[0].split(" ")[0] for line in open(sys.argv[1]) if line.strip() and not line.startswith("#")}
missing = sorted(set(DCGM) - served)
print(f"{len(DCGM) - len(missing)} of {len(DCGM)} catalogue names served")
for name in missing:
    print(f"  missing: {name} ({DCGM[name]})")
sys.exit(1 if missing else 0)
PY
status=$?
[ "$status" -eq 0 ] || tail -20 "$OUT/exporter.log"
exit "$status"
