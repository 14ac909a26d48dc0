"""The stages the CLI's `up` runs after the nodes exist, in order; each wraps a library call with its view."""
from __future__ import annotations

from provision.cli.deploy_cmd import run_with_view
from provision.deploy.engine import DeployOptions
from provision.errors import DeployError
from provision.lifecycle import StageRunner
from provision.providers.base import Progress
from provision.records import ClusterInfo
from provision.spec.model import ClusterSpec


def _deploy_stage(quiet: bool) -> StageRunner:
    """Deploy with the CLI's view; a failed host stops `up` (the stage is not marked done)."""
    def run(spec: ClusterSpec, cluster: ClusterInfo, progress: Progress) -> object:
        result = run_with_view(spec, cluster, DeployOptions(), quiet=quiet, json_out=False)
        if not result.ok:
            raise DeployError(f"deploy failed on {', '.join(result.failed_hosts) or 'the run'}",
                              hint=f"fix it, then `provision up` resumes (artifacts: {result.artifacts_dir})")
        return result
    return run


def later_stages(quiet: bool = False) -> dict[str, StageRunner]:
    """Stage name -> runner, in the order `up` runs them."""
    return {"deploy": _deploy_stage(quiet)}
