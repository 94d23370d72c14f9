"""Fixtures the operator's handler tests share: one emulated API server per test module,
the real operator running against it, and the real kubectl pointed at it.

A module that needs something else (another bookmark interval, CRDs of its own) defines
its own ``kube``; one that must stop and start operators itself uses
:func:`operator_harness.running_operator` directly instead of ``operator``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kube_api import KubeApiServer, running_kube_api
from operator_harness import Kubectl, RunningOperator, running_operator


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    with running_kube_api(tmp_path_factory.mktemp("kube") / "kubeconfig") as server:
        yield server


@pytest.fixture(scope="module")
def operator(kube: KubeApiServer) -> Iterator[RunningOperator]:
    with running_operator(kube) as running:
        yield running


@pytest.fixture(scope="module")
def kubectl(kube: KubeApiServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    return Kubectl(kube, tmp_path_factory.mktemp("kubectl"))
