"""The real kubectl (1.32) against the emulated API server: apply of a CRD and its objects,
printer columns, schema and CEL refusals, strategic merge of built-in kinds."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kube_api import KubeApiServer, running_kube_api

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl")

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: brokers.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: brokers, singular: broker, kind: Broker, shortNames: [bk]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Phase, type: string, jsonPath: .status.phase}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [replicas]
            properties:
              replicas:
                type: integer
                minimum: 1
                x-kubernetes-validations:
                - {rule: "self >= oldSelf", message: replicas cannot shrink}
              role: {type: string, enum: [master, slave], default: master}
          status:
            type: object
            properties:
              phase: {type: string}
"""


class Kubectl:
    """Runs kubectl against one server, with its own discovery cache."""

    def __init__(self, server: KubeApiServer, home: Path) -> None:
        self.env = {
            **os.environ,
            "KUBECONFIG": str(server.kubeconfig),
            "KUBECACHEDIR": str(home / "cache"),
            "HOME": str(home),
        }
        self.home = home

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl", *args],
            input=stdin,
            env=self.env,
            text=True,
            capture_output=True,
            timeout=60,
            check=False,
        )

    def apply(self, manifest: str) -> subprocess.CompletedProcess[str]:
        path = self.home / "manifest.yaml"
        path.write_text(manifest, encoding="utf-8")
        return self.run("apply", "-f", str(path))


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    home = tmp_path_factory.mktemp("kubectl")
    with running_kube_api(home / "kubeconfig") as server:
        tool = Kubectl(server, home)
        applied = tool.apply(CRD)
        assert applied.returncode == 0, applied.stderr
        yield tool


def broker(name: str, replicas: object, **more: object) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "example.com/v1",
            "kind": "Broker",
            "metadata": {"name": name},
            "spec": {"replicas": replicas, **more},
        }
    )


def test_apply_a_crd_then_its_objects_and_get_them_in_columns(kubectl: Kubectl) -> None:
    created = kubectl.apply(broker("b1", 2))
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "broker.example.com/b1 created"
    assert kubectl.apply(broker("b1", 2)).stdout.strip() == "broker.example.com/b1 unchanged"
    patched = kubectl.run(
        "patch",
        "broker",
        "b1",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status": {"phase": "Running"}}',
    )
    assert patched.returncode == 0, patched.stderr
    shown = kubectl.run("get", "brokers")
    assert shown.returncode == 0, shown.stderr
    header, row = shown.stdout.splitlines()
    assert header.split() == ["NAME", "REPLICAS", "PHASE", "AGE"]
    assert row.split()[:3] == ["b1", "2", "Running"]
    assert row.split()[3].endswith("s")
    by_short_name = kubectl.run("get", "bk", "b1", "-o", "jsonpath={.spec.role}")
    assert by_short_name.stdout == "master"


def test_apply_of_an_invalid_object_is_refused(kubectl: Kubectl) -> None:
    refused = kubectl.apply(broker("b2", "three"))
    assert refused.returncode != 0
    assert 'The Broker "b2" is invalid' in refused.stderr
    assert "spec.replicas" in refused.stderr
    assert "must be of type integer" in refused.stderr
    unsupported = kubectl.apply(broker("b2", 1, role="leader"))
    assert unsupported.returncode != 0
    assert 'spec.role: Unsupported value: "leader"' in unsupported.stderr
    assert kubectl.run("get", "broker", "b2").returncode != 0


def test_a_cel_transition_rule_refuses_a_shrink(kubectl: Kubectl) -> None:
    assert kubectl.apply(broker("b3", 3)).returncode == 0
    assert kubectl.apply(broker("b3", 4)).returncode == 0
    shrunk = kubectl.apply(broker("b3", 2))
    assert shrunk.returncode != 0
    assert "spec.replicas" in shrunk.stderr
    assert "replicas cannot shrink" in shrunk.stderr
    kept = kubectl.run("get", "broker", "b3", "-o", "jsonpath={.spec.replicas}")
    assert kept.stdout == "4"


def test_apply_merges_a_statefulsets_containers_by_name(kubectl: Kubectl) -> None:
    def statefulset(env: list[dict[str, str]], sidecar: bool) -> str:
        containers = [{"name": "broker", "image": "rocketkube:1", "env": env}]
        containers += [{"name": "sidecar", "image": "busybox"}] if sidecar else []
        return yaml.safe_dump(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": "web"},
                "spec": {
                    "serviceName": "web",
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": containers},
                    },
                },
            }
        )

    first = kubectl.apply(statefulset([{"name": "A", "value": "1"}], sidecar=True))
    assert first.returncode == 0, first.stderr
    second = kubectl.apply(statefulset([{"name": "B", "value": "2"}], sidecar=False))
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "statefulset.apps/web configured"
    assert "warning" not in second.stderr.lower()
    shown = kubectl.run(
        "get",
        "statefulset",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[*].name} "
        "{.spec.template.spec.containers[0].env[*].name}",
    )
    assert shown.stdout == "broker B"
    scaled = kubectl.run("scale", "statefulset", "web", "--replicas=3")
    assert scaled.returncode == 0, scaled.stderr
    replicas = kubectl.run("get", "sts", "web", "-o", "jsonpath={.spec.replicas}")
    assert replicas.stdout == "3"


def test_delete_waits_for_finalizers(kubectl: Kubectl) -> None:
    held = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
        }
    )
    assert kubectl.apply(held).returncode == 0
    deleted = kubectl.run("delete", "configmap", "held", "--wait=false")
    assert deleted.returncode == 0, deleted.stderr
    stamp = kubectl.run("get", "cm", "held", "-o", "jsonpath={.metadata.deletionTimestamp}")
    assert stamp.stdout
    released = kubectl.run(
        "patch", "cm", "held", "--type=merge", "-p", '{"metadata": {"finalizers": null}}'
    )
    assert released.returncode == 0, released.stderr
    waited = kubectl.run("wait", "--for=delete", "configmap/held", "--timeout=30s")
    assert waited.returncode == 0, waited.stderr
