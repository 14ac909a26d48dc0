"""The one place that talks to boto3/botocore: clients, retries with backoff, error translation, call counts.

Provider code calls ``aws.ec2.run_instances(...)`` and gets a parsed response or one of our
CloudError subclasses; it never sees a botocore exception. botocore's own retries are switched off
so that the policy below is the only one (and the call counter counts real attempts).
"""
from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlparse

from provision.errors import (CapacityError, CloudAuthError, CloudError, CloudNotFoundError, QuotaError,
                              ThrottledError)

AWS_DOMAINS = (".amazonaws.com", ".amazonaws.com.cn", ".api.aws", ".c2s.ic.gov", ".sc2s.sgov.gov")

THROTTLE_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException", "RequestThrottled",
    "TooManyRequestsException", "RequestLimitExceeded", "SlowDown", "EC2ThrottledException",
    "PriorRequestNotComplete", "BandwidthLimitExceeded", "ProvisionedThroughputExceededException",
})
TRANSIENT_CODES = frozenset({
    "InternalError", "InternalFailure", "InternalServerError", "InternalServerException", "ServiceUnavailable",
    "ServiceUnavailableException", "Unavailable", "RequestTimeout", "RequestTimeoutException",
})
CAPACITY_CODES = frozenset({
    "InsufficientInstanceCapacity", "InsufficientCapacity", "InsufficientHostCapacity",
    "InsufficientReservedInstanceCapacity", "InsufficientCapacityOnOutpost", "SpotMaxPriceTooLow",
})
QUOTA_CODES = frozenset({
    "VcpuLimitExceeded", "InstanceLimitExceeded", "MaxSpotInstanceCountExceeded", "ServiceQuotaExceededException",
    "InsufficientFreeAddressesInSubnet", "AddressLimitExceeded", "VpcLimitExceeded",
})
AUTH_CODES = frozenset({
    "AuthFailure", "UnauthorizedOperation", "AccessDenied", "AccessDeniedException", "InvalidClientTokenId",
    "ExpiredToken", "ExpiredTokenException", "SignatureDoesNotMatch", "OptInRequired", "InvalidAccessKeyId",
    "UnrecognizedClientException", "MissingAuthenticationToken", "Blocked", "PendingVerification",
})
NOT_FOUND_CODES = frozenset({
    "FileSystemNotFound", "InvalidPlacementGroup.Unknown", "NoSuchEntity", "ResourceNotFoundException",
    "NoSuchResourceException", "ParameterNotFound", "InvalidKeyPair.NotFound",
})
DEPENDENCY_CODES = frozenset({"DependencyViolation", "InvalidPlacementGroup.InUse", "ResourceInUse"})
# Not-found codes whose request names what is missing (AWS's own message for them may be empty): the request field
# that holds it, what it is, and how to find the right one (formatted with the value's parent path and the region).
MISSING = {
    "ParameterNotFound": ("Name", "SSM parameter", "check the name and the region: `aws ssm get-parameters-by-path "
                          "--region {region} --path {parent}` lists the parameters published there"),
}


class AlreadyExistsError(CloudError):
    """A create found the resource already there (for example a retried rule or a taken name)."""


class DependencyError(CloudError):
    """A delete was refused because something still uses the resource (it may clear by itself)."""


class UnsupportedError(CloudError):
    """A non-AWS endpoint (an emulator such as moto) does not implement the operation."""


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to retry: API throttling and transient faults, capacity shortages, and waiter polling."""

    max_attempts: int = 8  # per API call, for throttling and transient faults
    base_delay: float = 1.0  # seconds; doubles per attempt, full jitter
    max_delay: float = 30.0
    capacity_attempts: int = 3  # launches retried on InsufficientInstanceCapacity
    capacity_delay: float = 60.0
    dependency_attempts: int = 6  # deletes retried on DependencyViolation (ENIs still detaching)
    wait_delay: float = 15.0  # waiter polling interval
    wait_attempts: int = 80  # 80 x 15 s = 20 minutes
    fsx_wait_delay: float = 30.0
    fsx_wait_attempts: int = 60

    def backoff(self, attempt: int, base: float | None = None) -> float:
        """Full-jitter exponential delay before retry number `attempt` (1-based)."""
        ceiling = min(self.max_delay, (self.base_delay if base is None else base) * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)


@lru_cache(maxsize=1)
def _botocore() -> SimpleNamespace:
    """botocore's exception classes, imported on first use so `provision validate` stays fast."""
    import botocore.exceptions as exceptions
    from botocore.parsers import ResponseParserError  # not a BotoCoreError

    names = ("ClientError", "BotoCoreError", "WaiterError", "NoCredentialsError", "PartialCredentialsError",
             "NoRegionError", "ParamValidationError")
    found = SimpleNamespace(**{name: getattr(exceptions, name) for name in names})
    found.ResponseParserError = ResponseParserError
    found.sdk_errors = (found.ClientError, found.BotoCoreError, ResponseParserError)
    return found


class _Service:
    """`aws.ec2.describe_vpcs(...)`: attribute access turns into a retried, translated call."""

    def __init__(self, aws: Aws, name: str) -> None:
        self._aws = aws
        self._name = name

    def __getattr__(self, operation: str) -> Callable[..., dict]:
        if operation.startswith("_"):
            raise AttributeError(operation)
        return partial(self._aws.call, self._name, operation)


class Aws:
    """A region's AWS clients behind one retry policy, one error translation and one call counter."""

    def __init__(self, region: str, *, endpoint_url: str | None = None, policy: RetryPolicy = RetryPolicy(),
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.region = region
        self.endpoint_url = endpoint_url
        self.policy = policy
        self.sleep = sleep
        self.calls: Counter[str] = Counter()  # "ec2:RunInstances" -> attempts, for the bench and tests
        self._session = None
        self._clients: dict[str, Any] = {}
        self._handlers: list[tuple[str, Callable]] = []

    # --- clients and events -------------------------------------------------------------------

    def client(self, service: str):
        """The botocore client for a service, created once, with botocore's own retries off."""
        if service not in self._clients:
            import boto3
            from botocore.config import Config

            if self._session is None:
                self._session = boto3.session.Session(region_name=self.region)
            config = Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=10,
                            read_timeout=60, user_agent_appid="gpu-provision")
            try:
                client = self._session.client(service, region_name=self.region, endpoint_url=self.endpoint_url,
                                              config=config)
            except _botocore().BotoCoreError as exc:
                raise CloudError(f"cannot create the AWS {service} client: {exc}") from exc
            client.meta.events.register("before-parameter-build", partial(self._count, service))
            for event, handler in self._handlers:
                client.meta.events.register(event, handler)
            self._clients[service] = client
        return self._clients[service]

    def on(self, event: str, handler: Callable) -> None:
        """Register a botocore event handler on every client, present and future (tests inject faults here)."""
        self._handlers.append((event, handler))
        for client in self._clients.values():
            client.meta.events.register(event, handler)

    def _count(self, service: str, model, **_: Any) -> None:
        """Count one attempt of an operation (botocore before-parameter-build, which every attempt passes)."""
        self.calls[f"{service}:{model.name}"] += 1

    def official_endpoint(self, service: str) -> bool:
        """Whether the service's endpoint is AWS itself rather than an emulator or proxy."""
        host = urlparse(self.client(service).meta.endpoint_url).hostname or ""
        return host.endswith(AWS_DOMAINS)

    @property
    def ec2(self) -> _Service:
        """EC2 operations."""
        return _Service(self, "ec2")

    @property
    def fsx(self) -> _Service:
        """FSx operations."""
        return _Service(self, "fsx")

    @property
    def ssm(self) -> _Service:
        """SSM Parameter Store operations (AMI aliases)."""
        return _Service(self, "ssm")

    # --- calls ------------------------------------------------------------------------------------

    def call(self, service: str, operation: str, **params: Any) -> dict:
        """One API operation, retried on throttling and transient faults, errors translated."""
        method = getattr(self.client(service), operation)
        exceptions = _botocore()
        attempt = 0
        while True:
            attempt += 1
            try:
                return method(**params)
            except exceptions.sdk_errors as exc:
                error = self.translate(exc, service, operation, params)
            if not getattr(error, "retryable", False):
                raise error
            if attempt >= self.policy.max_attempts:
                raise self._exhausted(error, service, operation, attempt)
            self.sleep(self.policy.backoff(attempt))

    def pages(self, service: str, operation: str, key: str, *, token: str = "NextToken", **params: Any) -> list:
        """All items under `key` across every page of a paginated operation."""
        items: list = []
        params = dict(params)
        while True:
            page = self.call(service, operation, **params)
            items.extend(page.get(key) or [])
            next_token = page.get(token)
            if not next_token:
                return items
            params[token] = next_token

    def wait(self, service: str, waiter: str, *, delay: float | None = None, attempts: int | None = None,
             **params: Any) -> None:
        """Run a botocore waiter; throttling inside it restarts the wait, a timeout is a CloudError."""
        exceptions = _botocore()
        config = {"Delay": self.policy.wait_delay if delay is None else delay,
                  "MaxAttempts": attempts or self.policy.wait_attempts}
        attempt = 0
        while True:
            attempt += 1
            try:
                self.client(service).get_waiter(waiter).wait(WaiterConfig=config, **params)
                return
            except exceptions.WaiterError as exc:
                error_info = (exc.last_response or {}).get("Error") or {}
                if not error_info.get("Code"):
                    raise CloudError(f"{service} {waiter}: {exc.kwargs.get('reason') or exc}",
                                     hint="the resources are recorded; run the command again to resume") from exc
                error = self._from_code(error_info["Code"], error_info.get("Message", ""), service, waiter)
            except exceptions.sdk_errors as exc:
                error = self.translate(exc, service, waiter)
            if not getattr(error, "retryable", False):
                raise error
            if attempt >= self.policy.max_attempts:
                raise self._exhausted(error, service, waiter, attempt)
            self.sleep(self.policy.backoff(attempt))

    # --- error translation ------------------------------------------------------------------------

    def translate(self, exc: Exception, service: str, operation: str, params: dict | None = None) -> CloudError:
        """Map a botocore exception to our CloudError family; `retryable` says whether to try again. `params`, the
        request's, let a not-found error name what was missing (MISSING)."""
        exceptions = _botocore()
        if isinstance(exc, exceptions.ClientError):
            info = exc.response.get("Error") or {}
            code = str(info.get("Code") or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
            if code.isdigit() and not self.official_endpoint(service):
                return self._unsupported(service, operation, f"HTTP {code} without an AWS error body")
            return self._from_code(code, info.get("Message", ""), service, operation, params)
        if isinstance(exc, (exceptions.NoCredentialsError, exceptions.PartialCredentialsError)):
            return CloudAuthError(f"no usable AWS credentials for {service} {operation} ({exc})",
                                  hint="set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        if isinstance(exc, exceptions.NoRegionError):
            return CloudError("no AWS region configured", hint="set provider.region in the spec")
        if isinstance(exc, exceptions.ResponseParserError) and not self.official_endpoint(service):
            return self._unsupported(service, operation, "a response that is not an AWS API answer")
        if isinstance(exc, exceptions.ParamValidationError):
            return CloudError(f"{service} {operation}: invalid request ({exc})")
        endpoint = self.client(service).meta.endpoint_url
        error = CloudError(f"{service} {operation}: cannot reach {endpoint} ({exc})",
                           hint="check the network connection and the region")
        error.retryable = True
        return error

    def _from_code(self, code: str, message: str, service: str, operation: str,
                   params: dict | None = None) -> CloudError:
        """The CloudError subclass for an AWS error code."""
        text = f"{service} {operation}: {code}: {message}".rstrip(": ")
        missing = MISSING.get(code)
        if missing and isinstance((params or {}).get(missing[0]), str):
            return self._missing(code, f"{service} {operation}: {code}", params[missing[0]], *missing[1:])
        retryable = False
        if code in THROTTLE_CODES:
            error, retryable = ThrottledError(text), True
        elif code in TRANSIENT_CODES:
            error, retryable = CloudError(text), True
        elif code in CAPACITY_CODES:
            error = CapacityError(text, hint="try again later, another availability zone, or a capacity "
                                             "reservation (capacity: reservation)")
        elif code in QUOTA_CODES or code.endswith(("LimitExceeded", "QuotaExceeded")):
            error = QuotaError(text, hint="request an increase in the Service Quotas console, or ask for less")
        elif code in AUTH_CODES:
            error = CloudAuthError(text, hint="check the credentials (aws sts get-caller-identity) and that the "
                                              "IAM identity may call this operation")
        elif code in NOT_FOUND_CODES or code.endswith(("NotFound", "NotFoundException")):
            error = CloudNotFoundError(text)
        elif code in DEPENDENCY_CODES:
            error = DependencyError(text)
        elif code.endswith(("Duplicate", "AlreadyExists", "AlreadyExistsException", "AlreadyAssociated")):
            error = AlreadyExistsError(text)
        else:
            error = CloudError(text)
        error.code = code
        error.retryable = retryable
        return error

    def _missing(self, code: str, prefix: str, value: str, what: str, fix: str) -> CloudNotFoundError:
        """A not-found error that names the missing value and how to find the right one."""
        parent = value.rsplit("/", 1)[0] if "/" in value.strip("/") else "/"
        error = CloudNotFoundError(f"{prefix}: {what} {value} does not exist in {self.region}",
                                   hint=fix.format(region=self.region, parent=parent))
        error.code = code
        error.retryable = False
        return error

    def _unsupported(self, service: str, operation: str, what: str) -> UnsupportedError:
        """The error for an emulator that lacks an operation; never retried."""
        endpoint = self.client(service).meta.endpoint_url
        error = UnsupportedError(f"the endpoint {endpoint} does not implement {service} {operation} "
                                 f"(it answered with {what})")
        error.code = "Unsupported"
        error.retryable = False
        return error

    def _exhausted(self, error: CloudError, service: str, operation: str, attempts: int) -> CloudError:
        """The final error once retries run out."""
        if isinstance(error, ThrottledError):
            final = ThrottledError(f"{service} {operation} was still throttled after {attempts} attempts "
                                   f"({getattr(error, 'code', 'Throttling')})",
                                   hint="everything made so far is recorded; wait a minute and run the command "
                                        "again to resume")
        else:
            final = CloudError(f"{error.message} (after {attempts} attempts)",
                               hint="everything made so far is recorded; run the command again to resume")
        final.code = getattr(error, "code", "")
        final.retryable = False
        return final

