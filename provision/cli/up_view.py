"""`provision up` on the terminal: status lines, the live deploy, and each stage's record as the commands show it."""
from __future__ import annotations

from provision.certify.control.run import CertifyRun
from provision.cli import certify_view, preflight_view
from provision.cli.deploy_view import DeployWatch, recap
from provision.cli.output import err, out, progress_printer
from provision.cluster.lifecycle import UpView
from provision.deploy.events import PlayProgress
from provision.deploy.records import DeployResult
from provision.preflight.records import PreflightReport


class TerminalUpView(UpView):
    """Quiet (--quiet, --json): no status lines, task lines instead of the live view, the certify table only on a
    failure (on stderr). With --json every stage's rendering goes to stderr, so stdout holds only the JSON."""

    def __init__(self, quiet: bool, json_out: bool = False) -> None:
        self.quiet = quiet or json_out
        self._print = progress_printer(self.quiet)
        self._deploy: DeployWatch | None = None
        self._console = err if json_out else out

    def line(self, text: str) -> None:
        self._print(text)

    def notice(self, text: str) -> None:
        err.print(text)  # stderr, --quiet and --json too: a note about the spec file, not progress

    def stage_started(self, stage: str) -> None:
        if stage == "deploy":
            self._deploy = DeployWatch(self.quiet, json_out=False)
            self._deploy.start()

    def deploy_progress(self, progress: PlayProgress) -> None:
        if self._deploy:
            self._deploy.update(progress)

    def stage_finished(self, stage: str, record: object | None) -> None:
        if stage == "deploy" and self._deploy:
            self._deploy.stop()
        if isinstance(record, DeployResult):
            recap(record, self._console)
        elif isinstance(record, PreflightReport) and record.failed_nodes:
            preflight_view.render(record, self._console)
        elif isinstance(record, CertifyRun) and (not record.ok or not self.quiet):
            certify_view.render(record, err if self.quiet else out)
        elif isinstance(record, CertifyRun):
            certify_view.show_notes(record)
