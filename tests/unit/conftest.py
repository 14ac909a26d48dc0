"""Shared fixtures: the fake NVML (tests/fixtures/certify/fake_nvml.py), the fixture folder, and the loopback SSH
server (loopback_sshd.py: sshd_factory, key_file)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from loopback_sshd import key_file, sshd_factory

__all__ = ["key_file", "sshd_factory"]  # fixtures for every unit test

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "certify"


def _load_fake_nvml():
    name = "certify_fake_nvml"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FIXTURES / "fake_nvml.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


fake_nvml = _load_fake_nvml()


@pytest.fixture
def fixtures_dir() -> Path:
    """tests/fixtures/certify."""
    return FIXTURES


@pytest.fixture
def fake(monkeypatch):
    """Install a fake NVML: fake(gpus=[FakeGpu(...)], driver=..., cuda=..., init_error=...)."""
    def make(gpus=None, **kwargs):
        return fake_nvml.FakeNvml(gpus if gpus is not None else [fake_nvml.FakeGpu()], **kwargs).install(monkeypatch)
    return make
