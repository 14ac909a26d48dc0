"""The one place that talks to NVML (package nvidia-ml-py, module pynvml).

NVML is initialised once per `Session`. Every GPU is read field by field: a field the GPU or driver
does not support is listed in `unsupported`, any other NVML error lands in `errors` for that field,
and a GPU whose handle cannot be had becomes a record with `error` set; nothing here raises past the
caller except `NvmlUnavailable` (no package, no driver, no library). Standard library + pynvml only.
"""
from __future__ import annotations

import ctypes
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

try:
    import pynvml
except ImportError:  # the probe reports GPU checks as n/a when the package is missing
    pynvml = None  # type: ignore[assignment]

# nvmlClocksEventReason* bits (nvml.h); kept here so callers need not import pynvml.
EVENT_GPU_IDLE = 0x1
EVENT_APP_CLOCKS = 0x2
EVENT_SW_POWER_CAP = 0x4
EVENT_HW_SLOWDOWN = 0x8
EVENT_SYNC_BOOST = 0x10
EVENT_SW_THERMAL = 0x20
EVENT_HW_THERMAL = 0x40
EVENT_HW_POWER_BRAKE = 0x80
EVENT_DISPLAY_CLOCK = 0x100

# nvmlGpuFabricState_t (nvml.h; pynvml NVML_GPU_FABRIC_STATE_*): 0 means the GPU is on no NVLink fabric
# (single GPU, no NVSwitch, or a driver/GPU that does not report it), not that registration failed.
FABRIC_STATE_NOT_SUPPORTED = 0
FABRIC_STATE_NOT_STARTED = 1
FABRIC_STATE_IN_PROGRESS = 2
FABRIC_STATE_COMPLETED = 3
FABRIC_STATE_NAMES = {0: "not supported", 1: "not started", 2: "in progress", 3: "completed"}
# healthMask bits 0-1 (NVML_GPU_FABRIC_HEALTH_MASK_*_DEGRADED_BW): 1 = bandwidth degraded, 2 = not degraded
FABRIC_HEALTH_DEGRADED_BW_MASK, FABRIC_HEALTH_DEGRADED_BW_TRUE = 0x3, 1
NVLINK_COUNTERS = {"replay": 0, "recovery": 1, "crc_flit": 2, "crc_data": 3}  # NVML_NVLINK_ERROR_DL_*
_MAX_NVLINKS = 18  # NVML_NVLINK_MAX_LINKS is larger; no GPU in the catalogue has more than 18


class NvmlUnavailable(Exception):
    """NVML cannot be used on this machine; the message says why (shown as the n/a reason)."""


@dataclass
class NvLink:
    """One NVLink: whether it is up and its data-link error counters (only those NVML supports)."""

    link: int
    active: bool
    errors: dict[str, int] = field(default_factory=dict)


@dataclass
class GpuRecord:
    """Everything read from one GPU; None means not supported (see `unsupported`) or failed (`errors`)."""

    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    persistence_mode: bool | None = None
    ecc_enabled: bool | None = None
    ecc_pending_enabled: bool | None = None
    ecc_volatile_uncorrected: int | None = None
    ecc_volatile_corrected: int | None = None
    ecc_aggregate_uncorrected: int | None = None
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    retired_pages_sbe: int | None = None
    retired_pages_dbe: int | None = None
    retired_pages_pending: bool | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    pcie_replay_count: int | None = None
    nvlinks: list[NvLink] | None = None
    fabric_state: int | None = None
    fabric_status: int | None = None
    fabric_health_mask: int | None = None  # nvmlGpuFabricInfo_v2 healthMask; None on drivers without it
    clocks_event_reasons: int | None = None
    temperature_c: int | None = None
    temperature_slowdown_c: int | None = None
    temperature_shutdown_c: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    compute_pids: list[int] | None = None
    mig_current: bool | None = None
    mig_pending: bool | None = None
    vbios: str | None = None  # e.g. "96.00.74.00.01"
    unsupported: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    error: str | None = None  # the whole GPU could not be read


@dataclass
class LiveSample:
    """What changes under load, sampled while the benchmark runs."""

    index: int
    pcie_gen_current: int | None = None
    pcie_width_current: int | None = None
    clocks_event_reasons: int | None = None
    temperature_c: int | None = None
    power_w: float | None = None


@dataclass
class NvmlSnapshot:
    """The system's driver versions and every GPU; `available` False with the reason when NVML is unusable."""

    available: bool
    reason: str | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None  # "12.8", from nvmlSystemGetCudaDriverVersion_v2
    gpus: list[GpuRecord] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for the probe's JSON document."""
        return asdict(self)


def snapshot() -> NvmlSnapshot:
    """Read everything once; never raises (an unusable NVML gives `available=False` and the reason)."""
    try:
        with Session() as session:
            return session.snapshot()
    except NvmlUnavailable as exc:
        return NvmlSnapshot(available=False, reason=str(exc))


class Session:
    """NVML initialised once for the duration of a `with` block."""

    def __enter__(self) -> Session:
        if pynvml is None:
            raise NvmlUnavailable("the nvidia-ml-py package is not installed")
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise NvmlUnavailable(f"NVML could not start: {exc}") from exc
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass

    def snapshot(self) -> NvmlSnapshot:
        """Driver versions and a full record per GPU."""
        out = NvmlSnapshot(available=True)
        out.driver_version = _call(pynvml.nvmlSystemGetDriverVersion, None)
        cuda = _call(pynvml.nvmlSystemGetCudaDriverVersion_v2, None)
        out.cuda_driver_version = f"{cuda // 1000}.{(cuda % 1000) // 10}" if isinstance(cuda, int) else None
        try:
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as exc:
            raise NvmlUnavailable(f"NVML cannot count GPUs: {exc}") from exc
        out.gpus = [self.gpu(i) for i in range(count)]
        return out

    def gpu(self, index: int) -> GpuRecord:
        """One GPU, field by field."""
        record = GpuRecord(index=index)
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        except pynvml.NVMLError as exc:
            record.error = f"no handle for GPU {index}: {exc}"
            return record
        for name, reader in _READERS:
            _read(record, name, lambda reader=reader: reader(handle))
        return record

    def live(self, index: int) -> LiveSample:
        """PCIe link, clock event reasons, temperature and power of one GPU right now."""
        sample = LiveSample(index=index)
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        except pynvml.NVMLError:
            return sample
        scratch = GpuRecord(index=index)
        for name in ("pcie_gen_current", "pcie_width_current", "clocks_event_reasons", "temperature_c",
                     "power_w"):
            _read(scratch, name, lambda name=name: dict(_READERS)[name](handle))
            setattr(sample, name, getattr(scratch, name))
        return sample


def _call(fn: Callable[[], Any], default: Any) -> Any:
    """A system-level call whose failure only loses that value."""
    try:
        return fn()
    except pynvml.NVMLError:
        return default


def _read(record: GpuRecord, name: str, reader: Callable[[], Any]) -> None:
    """Run one reader and store its result(s); NotSupported and other errors are recorded per field."""
    try:
        value = reader()
    except pynvml.NVMLError_NotSupported:
        record.unsupported.append(name)
        return
    except pynvml.NVMLError as exc:
        record.errors[name] = str(exc)
        return
    if isinstance(value, dict):  # readers that fill several fields at once
        for key, item in value.items():
            setattr(record, key, item)
    else:
        setattr(record, name, value)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _ecc_mode(handle: Any) -> dict[str, bool]:
    current, pending = pynvml.nvmlDeviceGetEccMode(handle)
    return {"ecc_enabled": bool(current), "ecc_pending_enabled": bool(pending)}


def _ecc_count(kind: str, counter: str) -> Callable[[Any], int]:
    """Total ECC errors of one type (NVML_MEMORY_ERROR_TYPE_*) and counter (NVML_*_ECC)."""
    return lambda h: int(pynvml.nvmlDeviceGetTotalEccErrors(h, getattr(pynvml, kind), getattr(pynvml, counter)))


def _remapped_rows(handle: Any) -> dict[str, Any]:
    corr, unc, pending, failure = pynvml.nvmlDeviceGetRemappedRows(handle)
    return {"remapped_rows_correctable": int(corr), "remapped_rows_uncorrectable": int(unc),
            "remap_pending": bool(pending), "remap_failure": bool(failure)}


def _retired(cause: str) -> Callable[[Any], int]:
    """Pages retired for one cause (NVML_PAGE_RETIREMENT_CAUSE_*); pre-Ampere GPUs only."""
    return lambda h: len(pynvml.nvmlDeviceGetRetiredPages(h, getattr(pynvml, cause)))


def _nvlinks(handle: Any) -> list[NvLink]:
    """Links in order until NVML says a link index is not supported; the first one raising propagates."""
    links: list[NvLink] = []
    for link in range(_MAX_NVLINKS):
        try:
            active = bool(pynvml.nvmlDeviceGetNvLinkState(handle, link))
        except (pynvml.NVMLError_NotSupported, pynvml.NVMLError_InvalidArgument):
            if not links:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED) from None
            break
        errors = {}
        for name, counter in NVLINK_COUNTERS.items():
            try:
                errors[name] = int(pynvml.nvmlDeviceGetNvLinkErrorCounter(handle, link, counter))
            except pynvml.NVMLError:
                continue
        links.append(NvLink(link=link, active=active, errors=errors))
    return links


def _fabric(handle: Any) -> dict[str, int | None]:
    info = pynvml.c_nvmlGpuFabricInfoV_t()
    pynvml.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(info))
    mask = getattr(info, "healthMask", None)
    return {"fabric_state": int(info.state), "fabric_status": int(info.status),
            "fabric_health_mask": int(mask) if mask is not None else None}


def _event_reasons(handle: Any) -> int:
    try:
        return int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle))
    except pynvml.NVMLError_FunctionNotFound:  # drivers before the rename
        return int(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle))


def _temperature(handle: Any) -> int:
    try:
        return int(pynvml.nvmlDeviceGetTemperatureV(handle, pynvml.NVML_TEMPERATURE_GPU))
    except pynvml.NVMLError_FunctionNotFound:  # drivers before nvmlDeviceGetTemperatureV
        return int(pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU))


def _threshold(which: str) -> Callable[[Any], int]:
    """A temperature threshold (NVML_TEMPERATURE_THRESHOLD_*) in degrees C."""
    return lambda h: int(pynvml.nvmlDeviceGetTemperatureThreshold(h, getattr(pynvml, which)))


def _mig(handle: Any) -> dict[str, bool]:
    current, pending = pynvml.nvmlDeviceGetMigMode(handle)
    return {"mig_current": bool(current), "mig_pending": bool(pending)}


# (field name, reader) in the order they are read; a reader returning a dict fills several fields.
_READERS: list[tuple[str, Callable[[Any], Any]]] = [
    ("name", lambda h: _text(pynvml.nvmlDeviceGetName(h))),
    ("uuid", lambda h: _text(pynvml.nvmlDeviceGetUUID(h))),
    ("pci_bus_id", lambda h: _text(pynvml.nvmlDeviceGetPciInfo_v3(h).busId)),
    ("persistence_mode", lambda h: bool(pynvml.nvmlDeviceGetPersistenceMode(h))),
    ("ecc_enabled", _ecc_mode),
    ("ecc_volatile_uncorrected", _ecc_count("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_VOLATILE_ECC")),
    ("ecc_volatile_corrected", _ecc_count("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_VOLATILE_ECC")),
    ("ecc_aggregate_uncorrected", _ecc_count("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_AGGREGATE_ECC")),
    ("remap_pending", _remapped_rows),
    ("retired_pages_sbe", _retired("NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS")),
    ("retired_pages_dbe", _retired("NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR")),
    ("retired_pages_pending", lambda h: bool(pynvml.nvmlDeviceGetRetiredPagesPendingStatus(h))),
    ("pcie_gen_current", lambda h: int(pynvml.nvmlDeviceGetCurrPcieLinkGeneration(h))),
    ("pcie_gen_max", lambda h: int(pynvml.nvmlDeviceGetMaxPcieLinkGeneration(h))),
    ("pcie_width_current", lambda h: int(pynvml.nvmlDeviceGetCurrPcieLinkWidth(h))),
    ("pcie_width_max", lambda h: int(pynvml.nvmlDeviceGetMaxPcieLinkWidth(h))),
    ("pcie_replay_count", lambda h: int(pynvml.nvmlDeviceGetPcieReplayCounter(h))),
    ("nvlinks", _nvlinks),
    ("fabric_state", _fabric),
    ("clocks_event_reasons", _event_reasons),
    ("temperature_c", _temperature),
    ("temperature_slowdown_c", _threshold("NVML_TEMPERATURE_THRESHOLD_SLOWDOWN")),
    ("temperature_shutdown_c", _threshold("NVML_TEMPERATURE_THRESHOLD_SHUTDOWN")),
    ("power_w", lambda h: pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0),  # mW
    ("power_limit_w", lambda h: pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0),  # mW
    ("compute_pids", lambda h: [int(p.pid) for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)]),
    ("mig_current", _mig),
    ("vbios", lambda h: _text(pynvml.nvmlDeviceGetVbiosVersion(h))),
]
