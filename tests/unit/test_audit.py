"""Audit policy: which level each request gets, and which policy files are refused."""

from __future__ import annotations

import pytest

from minikube_py.apiserver.auditpolicy import DEFAULT_POLICY, PolicyError, load_policy, parse_policy
from minikube_py.auth.authn import UserInfo
from minikube_py.auth.authorizer import Attributes

ALICE = UserInfo("alice", groups=("devs", "system:authenticated"))
BOB = UserInfo("bob", groups=("system:authenticated",))


def res(verb: str, resource: str, *, user: UserInfo = ALICE, group: str = "", namespace: str = "default",
        name: str = "", subresource: str = "") -> Attributes:
    return Attributes(user=user, verb=verb, namespace=namespace, api_group=group, api_version="v1",
                      resource=resource, subresource=subresource, name=name)


def url(path: str, user: UserInfo = ALICE) -> Attributes:
    return Attributes(user=user, verb="get", resource_request=False, path=path)


def policy(rules: str, head: str = "") -> str:
    return f"apiVersion: audit.k8s.io/v1\nkind: Policy\n{head}rules:\n{rules}"


CASES = [
    ("no matching rule means None", "- {level: Metadata, users: [carol]}", res("get", "pods"), "None"),
    ("a rule without conditions matches everything", "- {level: Request}", res("get", "pods"), "Request"),
    ("the first matching rule wins", "- {level: None, verbs: [get]}\n- {level: RequestResponse}",
     res("get", "pods"), "None"),
    ("a later rule applies when earlier ones do not match", "- {level: None, verbs: [list]}\n- {level: Metadata}",
     res("get", "pods"), "Metadata"),
    ("users match the user name", "- {level: Request, users: [alice]}", res("get", "pods"), "Request"),
    ("users do not match someone else", "- {level: Request, users: [alice]}", res("get", "pods", user=BOB), "None"),
    ("userGroups match any of the user's groups", "- {level: Metadata, userGroups: [devs]}",
     res("get", "pods"), "Metadata"),
    ("a resource rule matches its group and resource",
     "- level: Request\n  resources: [{group: apps, resources: [deployments]}]",
     res("create", "deployments", group="apps"), "Request"),
    ("a resource rule does not match another group",
     "- level: Request\n  resources: [{group: '', resources: [deployments]}]",
     res("create", "deployments", group="apps"), "None"),
    ("a group without resources matches all of its resources", "- level: Request\n  resources: [{group: ''}]",
     res("get", "secrets"), "Request"),
    ("a subresource needs resource/subresource", "- level: Request\n  resources: [{resources: [pods]}]",
     res("get", "pods", subresource="log"), "None"),
    ("pods/log matches the log subresource", "- level: Request\n  resources: [{resources: [pods/log]}]",
     res("get", "pods", subresource="log"), "Request"),
    ("*/status matches every status subresource", "- level: Request\n  resources: [{resources: ['*/status']}]",
     res("update", "deployments", subresource="status"), "Request"),
    ("pods/* matches pods and every subresource", "- level: Request\n  resources: [{resources: ['pods/*']}]",
     res("get", "pods", subresource="exec"), "Request"),
    ("resourceNames restrict the rule to those objects",
     "- level: Request\n  resources: [{resources: [configmaps], resourceNames: [cfg]}]",
     res("get", "configmaps", name="other"), "None"),
    ("namespaces restrict resource rules", "- {level: Metadata, namespaces: [kube-system]}",
     res("get", "pods"), "None"),
    ("the namespace \"\" matches cluster-scoped requests", "- {level: Metadata, namespaces: ['']}",
     res("get", "nodes", namespace=""), "Metadata"),
    ("resource rules never match non-resource URLs", "- level: Request\n  resources: [{group: ''}]",
     url("/healthz"), "None"),
    ("nonResourceURLs match exactly", "- {level: Metadata, nonResourceURLs: [/version]}", url("/version"), "Metadata"),
    ("a trailing star matches any suffix", "- {level: None, nonResourceURLs: ['/healthz*']}\n- {level: Metadata}",
     url("/healthz/etcd"), "None"),
    ("nonResourceURLs never match resource requests", "- {level: Metadata, nonResourceURLs: ['*']}",
     res("get", "pods"), "None"),
]


@pytest.mark.parametrize(("rules", "attributes", "level"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_policy_levels(rules: str, attributes: Attributes, level: str) -> None:
    assert parse_policy(policy(rules)).evaluate(attributes).level == level


def test_omit_stages_of_policy_and_rule_are_combined() -> None:
    decision = parse_policy(policy("- {level: Metadata, omitStages: [ResponseStarted]}",
                                   head="omitStages: [RequestReceived]\n")).evaluate(res("get", "pods"))
    assert decision.omit_stages == {"RequestReceived", "ResponseStarted"}


def test_a_rule_may_override_omit_managed_fields() -> None:
    text = policy("- {level: Request, verbs: [create], omitManagedFields: false}\n- {level: Request}",
                  head="omitManagedFields: true\n")
    assert parse_policy(text).evaluate(res("create", "pods")).omit_managed_fields is False
    assert parse_policy(text).evaluate(res("get", "pods")).omit_managed_fields is True


def test_the_default_policy_skips_probes_and_records_metadata() -> None:
    default = parse_policy(DEFAULT_POLICY)
    assert default.evaluate(url("/readyz")).level == "None"
    assert default.evaluate(res("get", "secrets")).level == "Metadata"
    assert default.evaluate(url("/version")).level == "Metadata"


BAD = [
    ("an unknown level is refused", policy("- {level: Everything}"), 'rules[0].level: Unsupported value: "Everything"'),
    ("a rule without a level is refused", policy("- {verbs: [get]}"), "rules[0].level: Unsupported value"),
    ("an unknown stage is refused", policy("- {level: Metadata, omitStages: [Done]}"), 'Unsupported value: "Done"'),
    ("resources and nonResourceURLs together are refused",
     policy("- {level: Metadata, nonResourceURLs: [/x], resources: [{group: ''}]}"),
     "either non-resource URLs or resources"),
    ("a non-resource URL must be a path", policy("- {level: Metadata, nonResourceURLs: [healthz]}"),
     "must start with '/'"),
    ("resourceNames need a resource", policy("- level: Metadata\n  resources: [{resourceNames: [x]}]"),
     "using resourceNames requires at least one resource"),
    ("a policy without rules is refused", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n",
     "at least one rule"),
    ("another kind is refused", "apiVersion: v1\nkind: ConfigMap\n", 'expected kind "Policy"'),
    ("bad YAML is refused", "rules: [", "cannot parse YAML"),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_policies_are_one_line_errors_naming_the_file(tmp_path, text: str, message: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError) as err:
        load_policy(path)
    assert message in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_an_unreadable_policy_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PolicyError, match="failed to read audit policy file"):
        load_policy(tmp_path / "missing.yaml")
