"""Node-level GPU health: NVML reachable, GPU count, driver version and the CUDA version it supports."""
from __future__ import annotations

from provision.certify.probe.expect import NodeExpectation
from provision.certify.probe.nvml import NvmlSnapshot
from provision.certify.probe.records import CheckResult

NODE_CHECKS = ("gpu.nvml", "gpu.count", "gpu.driver.version", "gpu.driver.cuda_version")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def unavailable(snap: NvmlSnapshot, expect: NodeExpectation) -> list[CheckResult]:
    """NVML cannot be used: n/a everywhere when no GPU is expected, otherwise a failure that says why."""
    reason = snap.reason or "NVML unavailable"
    if not expect.gpu_count:
        return [CheckResult(check, "na", node=expect.node, detail=f"no GPU expected; {reason}")
                for check in NODE_CHECKS]
    return [
        CheckResult("gpu.nvml", "fail", node=expect.node, value="unavailable", threshold="available",
                    source="nvmlInit", detail=f"{reason}; is the NVIDIA driver loaded?"),
        CheckResult("gpu.count", "fail", node=expect.node, value=0, unit="GPUs", threshold=expect.gpu_count,
                    source="spec node group gpu.count", detail="no GPU visible to NVML"),
        CheckResult("gpu.driver.version", "na", node=expect.node, detail=reason),
        CheckResult("gpu.driver.cuda_version", "na", node=expect.node, detail=reason),
    ]


def checks(snap: NvmlSnapshot, expect: NodeExpectation) -> list[CheckResult]:
    """The node-level checks of a usable NVML."""
    return [CheckResult("gpu.nvml", "pass", node=expect.node, value="available", threshold="available",
                        source="nvmlInit"),
            count(snap, expect), driver_version(snap, expect), cuda_version(snap, expect)]


def count(snap: NvmlSnapshot, expect: NodeExpectation) -> CheckResult:
    """As many GPUs as the spec says: fewer fails, more warns."""
    found = len(snap.gpus)
    want = expect.gpu_count
    verdict = "pass" if found == want else "fail" if found < want else "warn"
    detail = "" if found == want else f"NVML sees {found} GPUs, the spec says {want}"
    return CheckResult("gpu.count", verdict, node=expect.node, value=found, unit="GPUs", threshold=want,
                       source="spec node group gpu.count", detail=detail)


def driver_version(snap: NvmlSnapshot, expect: NodeExpectation) -> CheckResult:
    """The pinned driver version, or one of the pinned branch."""
    found = snap.driver_version
    if found is None:
        return CheckResult("gpu.driver.version", "warn", node=expect.node, detail="NVML returned no driver version")
    if expect.driver_version:
        ok, threshold, source = found == expect.driver_version, expect.driver_version, "spec nvidia_driver.version"
    elif expect.driver_branch:
        ok, threshold = found.split(".")[0] == str(expect.driver_branch), f"{expect.driver_branch}.*"
        source = "spec nvidia_driver.branch"
    else:
        return CheckResult("gpu.driver.version", "na", node=expect.node, value=found, detail="no driver pinned")
    return CheckResult("gpu.driver.version", "pass" if ok else "fail", node=expect.node, value=found,
                       threshold=threshold, source=source,
                       detail="" if ok else "the running driver is not the deployed one; "
                                            "reboot or rerun the driver role")


def cuda_version(snap: NvmlSnapshot, expect: NodeExpectation) -> CheckResult:
    """The driver supports the newest deployed CUDA toolkit."""
    found = snap.cuda_driver_version
    if found is None:
        return CheckResult("gpu.driver.cuda_version", "warn", node=expect.node,
                           detail="NVML returned no CUDA driver version")
    if not expect.cuda_version:
        return CheckResult("gpu.driver.cuda_version", "na", node=expect.node, value=found, detail="no CUDA deployed")
    ok = _version(found) >= _version(expect.cuda_version)
    return CheckResult("gpu.driver.cuda_version", "pass" if ok else "fail", node=expect.node, value=found,
                       threshold=f">= {expect.cuda_version}", source="spec cuda.versions (newest)",
                       detail="" if ok else f"the driver supports CUDA {found}; toolkit {expect.cuda_version} "
                                            "will not run (see provision.node.compat)")
