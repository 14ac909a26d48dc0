#!/usr/bin/env bash
# One prepared run on a GPU machine (the device tool's, or any node with a GPU, nvcc and PyTorch), as root:
#   1. gpubench against PyTorch and the standard-level probe judged against the GPU table (bench/gpu_vs_torch.py);
#   2. the same probe as root and as a managed non-root user (what `certify` runs as), side by side: a check that
#      passes for root and not for the user is a finding (device files, NVML calls that need root);
#   3. the real tool outputs monitoring reads: nvidia-smi -q -x and a query of the fields an exporter exports.
# Everything lands in $OUT (default /tmp/gpu-session). Wheels in .whl/ (pydantic, for judging) are used if present.
# Usage: bash bench/gpu_session.sh   (exit 0 when every part ran; the log says what each found)
set -u
OUT=${OUT:-/tmp/gpu-session}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1
PY=$(command -v python3)
WORK=/tmp/gp
USER_NAME=gp-certify
USER_UID=3901
status=0

step() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "machine"
id; uname -r; "$PY" --version
nvidia-smi -L
nvidia-smi --query-gpu=name,driver_version,vbios_version,pci.bus_id,persistence_mode --format=csv
ls -l /dev/nvidia* 2>&1 | head -20

mkdir -p "$WORK"
if compgen -G ".whl/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" .whl/*.whl \
        || status=1
fi
cp -r provision "$WORK/"
export PYTHONPATH="$WORK/site:$WORK"
"$PY" -c "import importlib.metadata as m; print('nvidia-ml-py', m.version('nvidia-ml-py'))"

step "gpubench against PyTorch, then the standard probe judged (root)"
time "$PY" bench/gpu_vs_torch.py --rounds 3 --out "$OUT" || { echo "gpu_vs_torch exit $?"; status=1; }

step "build gpubench for the probe runs"
"$PY" - "$WORK" <<'EOF' || status=1
import json, socket, sys
from pathlib import Path
from provision.certify.gpubench.compare import compile_gpubench
from provision.certify.probe import nvml
from provision.certify.probe.expect import NodeExpectation
from provision.certify.probe.gpus import model_for_nvml_name
work = Path(sys.argv[1])
print("built", compile_gpubench(work))
snap = nvml.snapshot()
model = model_for_nvml_name(snap.gpus[0].name or "") if snap.gpus else None
expect = NodeExpectation(node=socket.gethostname().split(".")[0], gpu_model=model.key if model else None,
                         gpu_count=len(snap.gpus), driver_branch=int(snap.driver_version.split(".")[0]),
                         run_id="gpu-session")
(work / "expect.json").write_text(json.dumps(expect.to_dict()))
print("expectation", expect.to_dict())
EOF
chmod -R a+rX "$WORK"

step "managed non-root user"
getent passwd "$USER_NAME" >/dev/null || useradd --uid "$USER_UID" --create-home --shell /usr/sbin/nologin "$USER_NAME" \
    || status=1
id "$USER_NAME"
runuser -u "$USER_NAME" -- sh -c 'id; test -r /dev/nvidiactl && echo "nvidiactl readable"; ls -l /dev/nvidia0'

probe() {  # probe <label> [runuser prefix...]
    local label=$1; shift
    (cd /tmp && time "$@" env PYTHONPATH="$PYTHONPATH" PYTHONUNBUFFERED=1 "$PY" -m provision.certify.probe \
        --level standard --expect-json "@$WORK/expect.json" --gpubench "$WORK/gpubench") \
        >"$OUT/probe-$label.json" 2>"$WORK/probe-$label.err"
    echo "probe as $label: exit $?"; tail -5 "$WORK/probe-$label.err"
}
step "standard probe as root"
probe root
step "standard probe as $USER_NAME"
probe user runuser -u "$USER_NAME" --

step "root against user, check by check"
"$PY" - "$OUT" <<'EOF' || status=1
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
docs = {}
for label in ("root", "user"):
    text = (out / f"probe-{label}.json").read_text()
    docs[label] = json.loads(text[text.index("{"):]) if "{" in text else {}
checks = {label: {(c["check"], c.get("subject")): c for c in doc.get("checks", [])} for label, doc in docs.items()}
keys = sorted(set(checks["root"]) | set(checks["user"]), key=str)
differ = 0
for key in keys:
    r, u = checks["root"].get(key, {}), checks["user"].get(key, {})
    same = r.get("verdict") == u.get("verdict")
    differ += not same
    print(f"{'  ' if same else '!!'} {key[0]:<36} {key[1]!s:<8} root={r.get('verdict')!s:<6} user={u.get('verdict')!s:<6} "
          f"root={r.get('value')!s:<14} user={u.get('value')!s:<14} {'' if same else str(u.get('detail'))[:140]}")
for label, doc in docs.items():
    for m in doc.get("measurements", []):
        print(f"   {label:<4} {m['metric']:<24} {m.get('subject')!s:<6} {m['value']:.4g} {m['unit']}")
print(f"{len(keys)} checks, {differ} differ between root and the non-root user")
EOF

step "tool outputs for monitoring (root and user)"
nvidia-smi -q -x >"$OUT/nvidia-smi-q.xml" || status=1
runuser -u "$USER_NAME" -- nvidia-smi -q -x >"$WORK/nvidia-smi-q-user.xml"
echo "nvidia-smi -q -x: root $(wc -c <"$OUT/nvidia-smi-q.xml") bytes, user $(wc -c <"$WORK/nvidia-smi-q-user.xml") bytes"
diff <(grep -o '<[a-z_]*>[^<]*N/A' "$OUT/nvidia-smi-q.xml" | sort | uniq -c) \
     <(grep -o '<[a-z_]*>[^<]*N/A' "$WORK/nvidia-smi-q-user.xml" | sort | uniq -c) && echo "same N/A fields for both"
FIELDS=index,uuid,name,utilization.gpu,utilization.memory,memory.used,memory.total,temperature.gpu,temperature.memory,power.draw,power.limit,clocks.sm,clocks.mem,clocks_event_reasons.active,ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.volatile.total,retired_pages.pending,remapped_rows.pending,remapped_rows.failure,pcie.link.gen.current,pcie.link.width.current,fan.speed,pstate
nvidia-smi --query-gpu=$FIELDS --format=csv >"$OUT/query-gpu.csv" 2>&1 || status=1
cat "$OUT/query-gpu.csv"
echo "session exit $status"
exit $status
