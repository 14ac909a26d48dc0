"""NVIDIA's Xid catalogue: every code with the action the catalogue calls for, and what certification makes of it.

Source: NVIDIA, "Analyzing Xid Errors with the Xid Catalog" (docs.nvidia.com/deploy/xid-errors/
analyzing-xid-catalog.html, the r590 XID_Errors catalogue for Ampere and newer), column "Resolution Bucket
(Immediate Action)". Transcribed code by code from NVIDIA's machine-readable copy of that column in
NVIDIA/NVSentinel (distros/kubernetes/nvsentinel/charts/gpu-health-monitor/xiderrorsmapping.csv @6f8b0fcf),
with that file's UNEXPECTED_ERR_REPORT_ISSUE written back as the catalogue's CONTACT_SUPPORT (the catalogue
page shows CONTACT_SUPPORT for codes 1-7, 9, 10, 12, where the CSV has UNEXPECTED_ERR_REPORT_ISSUE).
Xid 154 has no bucket of its own: its message names the recovery action (nvmlDeviceGetGpuRecoveryAction values).
Standard library only (the node-side probe imports it).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

CATALOGUE = ("NVIDIA Xid catalog, Resolution Bucket (Immediate Action) "
             "(docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)")

# Catalogue bucket -> (machine-readable action, certification verdict). A bucket that needs the GPU reset, the
# node rebooted or the hardware looked at fails the node; one the application caused, or that asks NVIDIA to
# look at a report, warns; IGNORE passes (the Xid is listed, nothing is to be done).
BUCKETS: dict[str, tuple[str, str]] = {
    "IGNORE": ("none", "pass"),
    "RESTART_APP": ("restart_app", "warn"),
    "CONTACT_SUPPORT": ("contact_support", "warn"),
    "CHECK_UVM": ("check_uvm", "warn"),
    "WORKFLOW_XID_45": ("workflow_xid_45", "warn"),  # preemptive cleanup: the Xid it names is judged itself
    "RESET_GPU": ("reset_gpu", "fail"),
    "RESTART_BM": ("reboot", "fail"),
    "RESTART_VM": ("restart_vm", "fail"),
    "CHECK_MECHANICALS": ("check_mechanicals", "fail"),
    "UPDATE_SWFW": ("update_sw", "fail"),
    "WORKFLOW_XID_48": ("workflow_xid_48", "fail"),  # double-bit ECC: the catalogue's DBE workflow
    "WORKFLOW_NVLINK_ERR": ("workflow_nvlink_err", "fail"),
    "WORKFLOW_NVLINK5_ERR": ("workflow_nvlink5_err", "fail"),
}
XID_154 = "XID_154"  # "follow the guidance as it applies to another Xid": the action is in the message
NOT_IN_CATALOGUE = "CONTACT_SUPPORT"  # the catalogue's bucket for codes it does not use

# Xid 154 "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)": the code after "to"
# is an nvmlDeviceGpuRecoveryAction_t (pynvml NVML_GPU_RECOVERY_ACTION_*).
RECOVERY_ACTIONS: dict[int, tuple[str, str]] = {
    0: ("none", "pass"), 1: ("reset_gpu", "fail"), 2: ("reboot", "fail"), 3: ("drain_p2p", "fail"),
    4: ("drain_and_reset", "fail"), 5: ("recover_imex_domain", "warn"), 6: ("bus_reset", "fail"),
    7: ("reboot", "fail"),
}
_RECOVERY = re.compile(r"recovery action changed from \S+(?: \([^)]*\))? to (?P<code>0x[0-9a-fA-F]+|\d+)"
                       r"(?: \((?P<text>[^)]*)\))?", re.IGNORECASE)

# Plain words for the codes seen most; the mnemonic stands in for the rest.
MEANINGS: dict[int, str] = {
    13: "graphics engine exception", 31: "GPU memory page fault", 43: "GPU stopped processing (app reset)",
    45: "preemptive cleanup after a previous error", 46: "GPU stopped processing (timeout)",
    48: "double-bit ECC error", 54: "power or clocks reduced (slowdown)", 61: "internal micro-controller breakpoint",
    62: "internal micro-controller halt", 63: "ECC page retirement or row remapping event",
    64: "ECC page retirement or row remapping failure", 74: "NVLink error", 79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate", 94: "contained ECC error", 95: "uncontained ECC error",
    109: "context switch timeout", 110: "security fault", 119: "GSP RPC timeout", 120: "GSP error",
    121: "C2C link error", 136: "NVLink ALI training failure", 140: "unrecovered ECC error", 143: "GPU init error",
    154: "GPU recovery action changed", 155: "NVLink software-defined error", 156: "resource retirement event",
    158: "GPU fatal timeout", **{code: "NVLink error" for code in range(144, 151)},
}


@dataclass(frozen=True)
class XidEntry:
    """One catalogue row: the code, its mnemonic, the catalogue's bucket, our action and verdict."""

    code: int
    mnemonic: str
    bucket: str

    @property
    def action(self) -> str:
        """Machine-readable action (BUCKETS); Xid 154's comes from its message (recovery_action)."""
        return BUCKETS[self.bucket][0] if self.bucket in BUCKETS else "see_message"

    @property
    def verdict(self) -> str:
        """pass, warn or fail for a node that logged this Xid."""
        return BUCKETS[self.bucket][1] if self.bucket in BUCKETS else "warn"

    @property
    def meaning(self) -> str:
        """A few plain words, or the mnemonic."""
        return MEANINGS.get(self.code, self.mnemonic.lower().replace("_", " "))


# code, bucket (Resolution Bucket, Immediate Action), mnemonic
_TABLE = """
  1 CONTACT_SUPPORT      ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD
  2 CONTACT_SUPPORT      ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD
  3 CONTACT_SUPPORT      ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD
  4 CONTACT_SUPPORT      ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY
  5 CONTACT_SUPPORT      ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW
  6 CONTACT_SUPPORT      ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR
  7 CONTACT_SUPPORT      ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR
  8 RESTART_APP          ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT
  9 CONTACT_SUPPORT      ROBUST_CHANNEL_GR_ERROR_INSTANCE
 10 CONTACT_SUPPORT      ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP
 11 RESTART_APP          ROBUST_CHANNEL_GR_ERROR_MISSING_HW
 12 CONTACT_SUPPORT      ROBUST_CHANNEL_GR_ERROR_SW_METHOD
 13 RESTART_APP          ROBUST_CHANNEL_GR_EXCEPTION/ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY
 14 IGNORE               ROBUST_CHANNEL_FAKE_ERROR
 15 CONTACT_SUPPORT      ROBUST_CHANNEL_SCANLINE_TIMEOUT
 16 CONTACT_SUPPORT      ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT
 17 CONTACT_SUPPORT      ROBUST_CHANNEL_PARAMETER_ERROR
 18 CONTACT_SUPPORT      ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR
 19 CONTACT_SUPPORT      ROBUST_CHANNEL_DISP_MISSED_NOTIFIER
 20 CONTACT_SUPPORT      ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD
 21 CONTACT_SUPPORT      ROBUST_CHANNEL_ME_ERROR_SW_METHOD
 22 CONTACT_SUPPORT      ROBUST_CHANNEL_VP_ERROR_SW_METHOD
 23 CONTACT_SUPPORT      ROBUST_CHANNEL_RC_LOGGING_ENABLED
 24 CONTACT_SUPPORT      ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT
 25 RESTART_APP          ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY
 26 CONTACT_SUPPORT      ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT
 27 CONTACT_SUPPORT      ROBUST_CHANNEL_VP_ERROR
 28 CONTACT_SUPPORT      ROBUST_CHANNEL_VP2_ERROR
 29 CONTACT_SUPPORT      ROBUST_CHANNEL_BSP_ERROR
 30 CONTACT_SUPPORT      ROBUST_CHANNEL_BAD_ADDR_ACCESS
 31 RESTART_APP          ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT
 32 RESTART_APP          ROBUST_CHANNEL_PBDMA_ERROR
 33 CONTACT_SUPPORT      ROBUST_CHANNEL_SEC_ERROR
 34 CONTACT_SUPPORT      ROBUST_CHANNEL_MSVLD_ERROR
 35 CONTACT_SUPPORT      ROBUST_CHANNEL_MSPDEC_ERROR
 36 CONTACT_SUPPORT      ROBUST_CHANNEL_MSPPP_ERROR
 37 IGNORE               ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD
 38 IGNORE               ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT
 39 RESTART_APP          ROBUST_CHANNEL_CE0_ERROR
 40 RESTART_APP          ROBUST_CHANNEL_CE1_ERROR
 41 RESTART_APP          ROBUST_CHANNEL_CE2_ERROR
 42 CONTACT_SUPPORT      ROBUST_CHANNEL_VIC_ERROR
 43 IGNORE               ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR
 44 IGNORE               ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW
 45 WORKFLOW_XID_45      ROBUST_CHANNEL_PREEMPTIVE_REMOVAL
 46 RESET_GPU            ROBUST_CHANNEL_GPU_TIMEOUT_ERROR
 47 CONTACT_SUPPORT      ROBUST_CHANNEL_NVENC0_ERROR
 48 WORKFLOW_XID_48      ROBUST_CHANNEL_GPU_ECC_DBE
 49 CONTACT_SUPPORT      SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY
 50 CONTACT_SUPPORT      SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR
 51 CONTACT_SUPPORT      SILENT_RUNNING_STRESS_TEST_FAILURE
 52 CONTACT_SUPPORT      SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE
 53 CONTACT_SUPPORT      SILENT_RUNNING_TEMP_REDUCED_CLOCKING
 54 CHECK_MECHANICALS    SILENT_RUNNING_PWR_REDUCED_CLOCKING
 55 CONTACT_SUPPORT      SILENT_RUNNING_TEMPERATURE_READ_ERROR
 56 CONTACT_SUPPORT      DISPLAY_CHANNEL_EXCEPTION
 57 CONTACT_SUPPORT      FB_LINK_TRAINING_FAILURE_ERROR
 58 CONTACT_SUPPORT      FB_MEMORY_ERROR
 59 CONTACT_SUPPORT      PMU_ERROR
 60 RESTART_APP          ROBUST_CHANNEL_SEC2_ERROR
 61 CONTACT_SUPPORT      PMU_BREAKPOINT
 62 RESET_GPU            PMU_HALT_ERROR
 63 IGNORE               INFOROM_DRAM_RETIREMENT_EVENT
 64 RESET_GPU            INFOROM_DRAM_RETIREMENT_FAILURE
 65 CONTACT_SUPPORT      ROBUST_CHANNEL_NVENC1_ERROR
 66 IGNORE               ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION
 67 IGNORE               ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION
 68 RESTART_APP          ROBUST_CHANNEL_NVDEC0_ERROR
 69 RESTART_APP          ROBUST_CHANNEL_GR_CLASS_ERROR
 70 RESTART_APP          ROBUST_CHANNEL_CE3_ERROR
 71 RESTART_APP          ROBUST_CHANNEL_CE4_ERROR
 72 RESTART_APP          ROBUST_CHANNEL_CE5_ERROR
 73 CONTACT_SUPPORT      ROBUST_CHANNEL_NVENC2_ERROR
 74 WORKFLOW_NVLINK_ERR  NVLINK_ERROR
 75 RESTART_APP          ROBUST_CHANNEL_CE6_ERROR
 76 RESTART_APP          ROBUST_CHANNEL_CE7_ERROR
 77 RESTART_APP          ROBUST_CHANNEL_CE8_ERROR
 78 UPDATE_SWFW          VGPU_START_ERROR
 79 RESTART_BM           ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS
 80 RESTART_APP          PBDMA_PUSHBUFFER_CRC_MISMATCH
 81 CONTACT_SUPPORT      ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR
 82 RESTART_APP          ROBUST_CHANNEL_NVJPG0_ERROR
 83 RESTART_APP          ROBUST_CHANNEL_NVDEC1_ERROR
 84 RESTART_APP          ROBUST_CHANNEL_NVDEC2_ERROR
 85 RESTART_APP          ROBUST_CHANNEL_CE9_ERROR
 86 RESTART_APP          ROBUST_CHANNEL_OFA0_ERROR
 87 CONTACT_SUPPORT      NVTELEMETRY_DRIVER_REPORT
 88 RESTART_APP          ROBUST_CHANNEL_NVDEC3_ERROR
 89 RESTART_APP          ROBUST_CHANNEL_NVDEC4_ERROR
 90 CONTACT_SUPPORT      LTC_ERROR
 91 CONTACT_SUPPORT      RESERVED_XID
 92 IGNORE               EXCESSIVE_SBE_INTERRUPTS
 93 IGNORE               INFOROM_ERASE_LIMIT_EXCEEDED
 94 RESTART_APP          ROBUST_CHANNEL_CONTAINED_ERROR
 95 RESET_GPU            ROBUST_CHANNEL_UNCONTAINED_ERROR
 96 RESTART_APP          ROBUST_CHANNEL_NVDEC5_ERROR
 97 RESTART_APP          ROBUST_CHANNEL_NVDEC6_ERROR
 98 RESTART_APP          ROBUST_CHANNEL_NVDEC7_ERROR
 99 RESTART_APP          ROBUST_CHANNEL_NVJPG1_ERROR
100 RESTART_APP          ROBUST_CHANNEL_NVJPG2_ERROR
101 RESTART_APP          ROBUST_CHANNEL_NVJPG3_ERROR
102 RESTART_APP          ROBUST_CHANNEL_NVJPG4_ERROR
103 RESTART_APP          ROBUST_CHANNEL_NVJPG5_ERROR
104 RESTART_APP          ROBUST_CHANNEL_NVJPG6_ERROR
105 RESTART_APP          ROBUST_CHANNEL_NVJPG7_ERROR
106 IGNORE               SMBPBI_TEST_MESSAGE
107 IGNORE               SMBPBI_TEST_MESSAGE_SILENT
108 CONTACT_SUPPORT      DESTINATION_FLA_TRANSLATION_ERROR
109 RESET_GPU            ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR
110 RESET_GPU            SEC_FAULT_ERROR
111 CONTACT_SUPPORT      BUNDLE_ERROR_EVENT
112 CONTACT_SUPPORT      DISP_SUPERVISOR_ERROR
113 CONTACT_SUPPORT      DP_LT_FAILURE
114 CONTACT_SUPPORT      HEAD_RG_UNDERFLOW
115 CONTACT_SUPPORT      CORE_CHANNEL_REGS
116 CONTACT_SUPPORT      WINDOW_CHANNEL_REGS
117 CONTACT_SUPPORT      CURSOR_CHANNEL_REGS
118 CONTACT_SUPPORT      HEAD_REGS
119 RESET_GPU            GSP_RPC_TIMEOUT
120 RESET_GPU            GSP_ERROR
121 IGNORE               C2C_ERROR
122 CONTACT_SUPPORT      SPI_PMU_RPC_READ_FAIL
123 CONTACT_SUPPORT      SPI_PMU_RPC_WRITE_FAIL
124 CONTACT_SUPPORT      SPI_PMU_RPC_ERASE_FAIL
125 CONTACT_SUPPORT      INFOROM_FS_ERROR
126 RESTART_APP          ROBUST_CHANNEL_CE10_ERROR
127 RESTART_APP          ROBUST_CHANNEL_CE11_ERROR
128 RESTART_APP          ROBUST_CHANNEL_CE12_ERROR
129 RESTART_APP          ROBUST_CHANNEL_CE13_ERROR
130 RESTART_APP          ROBUST_CHANNEL_CE14_ERROR
131 RESTART_APP          ROBUST_CHANNEL_CE15_ERROR
132 RESTART_APP          ROBUST_CHANNEL_CE16_ERROR
133 RESTART_APP          ROBUST_CHANNEL_CE17_ERROR
134 RESTART_APP          ROBUST_CHANNEL_CE18_ERROR
135 RESTART_APP          ROBUST_CHANNEL_CE19_ERROR
136 RESET_GPU            ALI_TRAINING_FAIL
137 IGNORE               NVLINK_FLA_PRIV_ERR
138 CONTACT_SUPPORT      ROBUST_CHANNEL_DLA_ERROR
139 RESTART_APP          ROBUST_CHANNEL_OFA1_ERROR
140 RESET_GPU            UNRECOVERABLE_ECC_ERROR_ESCAPE
141 IGNORE               ROBUST_CHANNEL_FAST_PATH_ERROR
142 CONTACT_SUPPORT      ROBUST_CHANNEL_NVENC3_ERROR
143 RESET_GPU            GPU_INIT_ERROR
144 WORKFLOW_NVLINK5_ERR NVLINK_SAW_ERROR
145 WORKFLOW_NVLINK5_ERR NVLINK_RLW_ERROR
146 WORKFLOW_NVLINK5_ERR NVLINK_TLW_ERROR
147 WORKFLOW_NVLINK5_ERR NVLINK_TREX_ERROR
148 WORKFLOW_NVLINK5_ERR NVLINK_NVLPW_CTRL_ERROR
149 WORKFLOW_NVLINK5_ERR NVLINK_NETIR_ERROR
150 WORKFLOW_NVLINK5_ERR NVLINK_MSE_ERROR
151 RESTART_VM           ROBUST_CHANNEL_KEY_ROTATION_ERROR
152 IGNORE               ROBUST_CHANNEL_DLA_SMMU_ERROR
153 IGNORE               ROBUST_CHANNEL_DLA_TIMEOUT
154 XID_154              GPU_RECOVERY_ACTION_CHANGED
155 RESET_GPU            NVLINK_SW_DEFINED_ERROR
156 RESET_GPU            RESOURCE_RETIREMENT_EVENT
157 IGNORE               RESOURCE_RETIREMENT_FAILURE
158 RESET_GPU            GPU_FATAL_TIMEOUT
159 CHECK_UVM            ROBUST_CHANNEL_CHI_NON_DATA_ERROR
160 RESTART_BM           CHANNEL_RETIREMENT_EVENT
161 IGNORE               CHANNEL_RETIREMENT_FAILURE
162 RESET_GPU            -
"""

ENTRIES: dict[int, XidEntry] = {
    int(code): XidEntry(int(code), mnemonic if mnemonic != "-" else "", bucket)
    for code, bucket, mnemonic in (line.split() for line in _TABLE.strip().splitlines())
}


def entry(code: int) -> XidEntry:
    """The catalogue row of a code; a code the catalogue does not list is treated as its unused codes are."""
    return ENTRIES.get(code) or XidEntry(code, "not in the catalogue", NOT_IN_CATALOGUE)


def recovery_action(message: str) -> tuple[str, str] | None:
    """(action, verdict) named by an Xid 154 message; None when the message names none this tool knows."""
    match = _RECOVERY.search(message)
    if not match:
        return None
    code = int(match["code"], 16) if match["code"].lower().startswith("0x") else int(match["code"])
    if code in RECOVERY_ACTIONS:
        return RECOVERY_ACTIONS[code]
    text = (match["text"] or "").lower()
    return ("reboot", "fail") if "reboot" in text else ("reset_gpu", "fail") if "reset" in text else None
