"""The stages the CLI's `up` runs after the nodes exist, in order; each wraps a library call with its view."""
from __future__ import annotations

from provision.certify.run import CertifyOptions, certify
from provision.cli.certify_cmd import render as render_certify
from provision.cli.deploy_cmd import run_with_view
from provision.cli.output import err, out
from provision.deploy.engine import DeployOptions
from provision.cli.preflight_cmd import render as render_preflight
from provision.errors import CertifyError, DeployError, PreflightError
from provision import lifecycle
from provision.lifecycle import StageRunner
from provision.records import ClusterInfo, Progress
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


def _preflight_stage(spec: ClusterSpec, cluster: ClusterInfo, progress: Progress) -> object:
    """Check every node; a failing node stops `up` with the table."""
    report = lifecycle.preflight(spec, cluster)
    if report.failed_nodes:
        render_preflight(report)
        raise PreflightError(f"preflight failed on {', '.join(report.failed_nodes)}",
                             hint="fix the nodes, or pass --skip-preflight")
    progress(f"preflight passed on {len(report.nodes)} nodes in {report.elapsed_s:.1f} s")
    return report


def _certify_stage(quiet: bool) -> StageRunner:
    """Certify at the spec's level (quick by default); a failed check shows the report and stops `up`."""
    def run(spec: ClusterSpec, cluster: ClusterInfo, progress: Progress) -> object:
        result = certify(spec, cluster, CertifyOptions(level=spec.certify.level), progress)
        if not result.ok or not quiet:
            render_certify(result, err if quiet else out)
        if not result.ok:
            raise CertifyError(f"certification failed on {', '.join(result.failed_nodes) or 'the cluster'}",
                               hint=f"see {result.paths.html if result.paths else 'the report'}; fix the nodes, "
                                    "then `provision up` certifies again (or `provision certify SPEC`)")
        return result  # the CertifyRun: report and report paths
    return run


def later_stages(quiet: bool = False) -> dict[str, StageRunner]:
    """Stage name -> runner, in the order `up` runs them."""
    return {"preflight": _preflight_stage, "deploy": _deploy_stage(quiet), "certify": _certify_stage(quiet)}
