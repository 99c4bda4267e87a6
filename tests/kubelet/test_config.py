"""The kubelet's flags: values it cannot work with are one-line errors naming the flag."""

from __future__ import annotations

import subprocess
import sys

import pytest

from minikube_py.kubelet.config import KubeletConfig, KubeletConfigError, parse_labels, parse_taints
from tests.kubelet.nodes import REPO


def test_taints_and_labels_parse_as_the_real_kubelet_takes_them() -> None:
    assert parse_taints(["dedicated=gpu:NoSchedule", "spot:PreferNoSchedule", ""]) == [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, {"key": "spot", "effect": "PreferNoSchedule"}]
    assert parse_labels(["zone=a", "tier="]) == {"zone": "a", "tier": ""}


@pytest.mark.parametrize(("build", "message"), [
    (lambda: parse_taints(["dedicated=gpu"]), "--register-with-taints: 'dedicated=gpu' is not key[=value]:Effect"),
    (lambda: parse_taints(["a=b:Sometimes"]), 'Unsupported value: "Sometimes"'),
    (lambda: parse_labels(["novalue"]), "--node-labels: 'novalue' is not key=value"),
    (lambda: KubeletConfig(pod_cidr="10.1.2.3/33"), "--pod-cidr:"),
    (lambda: KubeletConfig(capacity_memory="lots"), "--capacity-memory: 'lots' is not a quantity"),
    (lambda: KubeletConfig(max_pods=0), "--max-pods: must be positive"),
])
def test_bad_values_name_the_flag(build, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KubeletConfigError) as raised:
        build()
    assert message in str(raised.value)


def test_the_command_refuses_a_bad_flag_with_one_line() -> None:
    result = subprocess.run([sys.executable, "-m", "minikube_py.cli.main", "kubelet", "--pod-cidr=not-a-cidr"],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2
    assert "--pod-cidr" in result.stderr and "Traceback" not in result.stderr
