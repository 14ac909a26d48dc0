"""One root exception, one subclass per domain, each with the exit code the CLI uses."""
from __future__ import annotations

# Exit codes, documented in the README.
EXIT_OK = 0
EXIT_FAILED = 1  # the operation ran and found failures (a host failed, a check failed)
EXIT_BAD_INPUT = 2  # invalid spec, arguments or files; nothing was changed
EXIT_ENVIRONMENT = 3  # this machine or the provider cannot do what was asked
EXIT_CHANGES = 4  # a dry run (`deploy --check`) found what a real run would change: the cluster drifted
EXIT_INTERRUPTED = 130


class ProvisionError(Exception):
    """Root of every error the tool raises on purpose; the CLI prints it as one line."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}; {self.hint}" if self.hint else self.message


class SpecError(ProvisionError):
    """The cluster spec cannot be read or is invalid."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, *, findings: list | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.findings = findings or []


class UsageError(ProvisionError):
    """A command-line argument or input path is wrong."""

    exit_code = EXIT_BAD_INPUT


class StateError(ProvisionError):
    """The cluster's state directory is missing, unreadable or inconsistent."""

    exit_code = EXIT_ENVIRONMENT


class ClusterBusyError(StateError):
    """Another command holds the cluster's lock (provision.cluster.lock); the message names it."""


class ProviderError(ProvisionError):
    """A provider could not create, describe or destroy nodes."""

    exit_code = EXIT_ENVIRONMENT


class ClaimError(ProviderError):
    """Another cluster of the same name (another state root) holds the name's claim in the cloud; the message names
    it. Like a busy lock, nothing was changed."""


class SandboxError(ProviderError):
    """The sandbox cannot run on this machine (privileges, kernel features, debootstrap)."""


class CloudError(ProviderError):
    """A cloud API call failed; subclasses name the kind of failure."""


class CapacityError(CloudError):
    """The cloud has no capacity for the requested instances right now."""


class QuotaError(CloudError):
    """An account limit (vCPU quota, resource count) blocks the request."""


class ThrottledError(CloudError):
    """The API kept throttling after every retry."""


class CloudAuthError(CloudError):
    """Credentials are missing, expired or lack a permission."""


class CloudNotFoundError(CloudError):
    """A resource the state file names no longer exists."""


class ConnectionFailure(ProvisionError):
    """A node could not be reached or authenticated over SSH."""

    exit_code = EXIT_FAILED


class DeployError(ProvisionError):
    """Ansible could not run, or hosts failed."""

    exit_code = EXIT_FAILED


class PreflightError(ProvisionError):
    """One or more nodes failed preflight."""

    exit_code = EXIT_FAILED


class CertifyError(ProvisionError):
    """Certification could not run or the cluster failed it."""

    exit_code = EXIT_FAILED
