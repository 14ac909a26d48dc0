"""Check mode's blind spot: a command task the module skips because it "would have run".

Ansible reports such a task as skipped, never as changed, so a drift that only a command repairs (a stopped
GlusterFS volume, a missing database user) would pass `--check` unseen. This callback writes one JSON line
{"host", "task"} per such task to the file named by $GPU_PROVISION_WOULD_RUN_FILE; `provision deploy --check`
lists them with the tasks that would change. Without the variable (plain ansible-playbook) it does nothing.
Read-only probes in the roles carry `check_mode: false`, so they run and are never counted here. A no_log task's
result is censored before callbacks see it, so such a command needs its own report task in check mode.
"""
from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: gpu_provision_would_run
    type: aggregate
    short_description: record command tasks that check mode skipped because they would have run
    description: writes {"host", "task"} lines to $GPU_PROVISION_WOULD_RUN_FILE (nothing when it is unset)
    requirements: [enabled in ansible.cfg's callbacks_enabled]
"""
WOULD_RUN = ("Command would have run if not in check mode",)


class CallbackModule(CallbackBase):
    """Appends a line per skipped-because-check-mode command result."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpu_provision_would_run"
    CALLBACK_NEEDS_ENABLED = True

    def v2_runner_on_skipped(self, result) -> None:
        path = os.environ.get("GPU_PROVISION_WOULD_RUN_FILE")
        message = str(result._result.get("msg", ""))
        if path and message.startswith(WOULD_RUN):
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"host": result._host.get_name(), "task": result._task.get_name()}) + "\n")
