"""MutatingWebhookConfigurations and ValidatingWebhookConfigurations (admissionregistration.k8s.io/v1).

A configuration lists webhooks; the apiserver calls each one that matches a request (see
`admission/plugins/webhook`). What is checked here is what the dispatcher relies on: every webhook has a
fully qualified, unique name, says whether it has side effects (v1 only accepts `None` and `NoneOnDryRun`),
speaks an AdmissionReview version the apiserver knows, is reached through exactly one of an https `url` or
a `service`, and waits 1 to 30 seconds at most. Rules name operations, groups, versions and resources with
kube's wildcard restrictions. Messages and field paths are kube 1.32's.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from minikube_py.api import names
from minikube_py.api.errors import FieldError, duplicate, required
from minikube_py.api.gofmt import go_quote
from minikube_py.api.validation.messages import (
    as_list,
    dict_items,
    go_string_slice,
    invalid_go,
    invalid_value,
    not_supported_go,
)
from minikube_py.api.validation.meta import validate_label_selector

ADMISSION_REVIEW_VERSIONS = ["v1", "v1beta1"]
SIDE_EFFECT_CLASSES = ["None", "NoneOnDryRun"]
FAILURE_POLICIES = ["Fail", "Ignore"]
MATCH_POLICIES = ["Equivalent", "Exact"]
REINVOCATION_POLICIES = ["IfNeeded", "Never"]
OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
SCOPES = ["*", "Cluster", "Namespaced"]
_URL_FORM = "; desired format: https://host[/path]"


def mutating_webhook_configuration(obj: dict[str, Any]) -> list[FieldError]:
    return _configuration(obj, mutating=True)


def validating_webhook_configuration(obj: dict[str, Any]) -> list[FieldError]:
    return _configuration(obj, mutating=False)


def _configuration(obj: dict[str, Any], *, mutating: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, hook in enumerate(dict_items(obj.get("webhooks"))):
        path = f"webhooks[{i}]"
        name = str(hook.get("name") or "")
        if name and name in seen:
            errs.append(duplicate(f"{path}.name", name))
        seen.add(name)
        errs += _webhook(hook, path, mutating)
    return errs


def _webhook(hook: dict[str, Any], path: str, mutating: bool) -> list[FieldError]:
    errs = _fully_qualified_name(str(hook.get("name") or ""), f"{path}.name")
    for j, rule in enumerate(dict_items(hook.get("rules"))):
        errs += _rule_with_operations(rule, f"{path}.rules[{j}]")
    errs += _one_of(hook, "failurePolicy", FAILURE_POLICIES, path)
    errs += _one_of(hook, "matchPolicy", MATCH_POLICIES, path)
    if mutating:
        errs += _one_of(hook, "reinvocationPolicy", REINVOCATION_POLICIES, path)
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        errs.append(required(f"{path}.sideEffects", f"must specify one of {', '.join(SIDE_EFFECT_CLASSES)}"))
    else:
        errs += _one_of(hook, "sideEffects", SIDE_EFFECT_CLASSES, path)
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        errs.append(invalid_value(f"{path}.timeoutSeconds", timeout,
                                  "the timeout value must be between 1 and 30 seconds"))
    errs += _admission_review_versions(hook.get("admissionReviewVersions"), f"{path}.admissionReviewVersions")
    errs += validate_label_selector(hook.get("namespaceSelector"), f"{path}.namespaceSelector")
    errs += validate_label_selector(hook.get("objectSelector"), f"{path}.objectSelector")
    return errs + _client_config(hook.get("clientConfig"), f"{path}.clientConfig")


def _fully_qualified_name(name: str, path: str) -> list[FieldError]:
    if not name:
        return [required(path)]
    errs = [invalid_value(path, name, m) for m in names.is_dns1123_subdomain(name)]
    if len(name.split(".")) < 3:
        errs.append(invalid_value(path, name, "should be a domain with at least three segments separated by dots"))
    return errs


def _one_of(hook: dict[str, Any], key: str, supported: list[str], path: str) -> list[FieldError]:
    value = hook.get(key)
    if value is None or value in supported:
        return []
    return [not_supported_go(f"{path}.{key}", go_quote(str(value)), supported)]


def _rule_with_operations(rule: dict[str, Any], path: str) -> list[FieldError]:
    operations = [str(op) for op in as_list(rule.get("operations"))]
    errs: list[FieldError] = []
    if not operations:
        errs.append(required(f"{path}.operations"))
    elif len(operations) > 1 and "*" in operations:
        errs.append(invalid_go(f"{path}.operations", _operations_go(operations),
                               "if '*' is present, must not specify other operations"))
    errs += [not_supported_go(f"{path}.operations[{i}]", go_quote(op), OPERATIONS)
             for i, op in enumerate(operations) if op not in OPERATIONS]
    for key, what in (("apiGroups", "API groups"), ("apiVersions", "API versions")):
        values = [str(v) for v in as_list(rule.get(key))]
        if not values:
            errs.append(required(f"{path}.{key}"))
        elif len(values) > 1 and "*" in values:
            errs.append(invalid_go(f"{path}.{key}", go_string_slice(values),
                                   f"if '*' is present, must not specify other {what}"))
    errs += [required(f"{path}.apiVersions[{i}]")
             for i, version in enumerate(as_list(rule.get("apiVersions"))) if not version]
    errs += _resources([str(r) for r in as_list(rule.get("resources"))], f"{path}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        errs.append(not_supported_go(f"{path}.scope", go_quote(str(scope)), SCOPES))
    return errs


def _operations_go(operations: list[str]) -> str:
    return go_string_slice(operations, "[]admissionregistration.OperationType")


def _resources(resources: list[str], path: str) -> list[FieldError]:
    """Resource names, `res/sub`, with the wildcard combinations kube refuses as redundant."""
    if not resources:
        return [required(path)]
    errs: list[FieldError] = []
    wildcard_subs: set[str] = set()  # "x/*" seen
    wildcard_res: set[str] = set()  # "*/x" seen
    plain = False
    for i, item in enumerate(resources):
        if not item:
            errs.append(required(f"{path}[{i}]"))
            continue
        res, slash, sub = item.partition("/")
        if not slash:
            plain = plain or item != "*"
            continue
        if res in wildcard_subs:
            errs.append(invalid_value(f"{path}[{i}]", item, f"if '{res}/*' is present, must not specify {item}"))
        if sub in wildcard_res:
            errs.append(invalid_value(f"{path}[{i}]", item, f"if '*/{sub}' is present, must not specify {item}"))
        if sub == "*":
            wildcard_subs.add(res)
        if res == "*":
            wildcard_res.add(sub)
    if len(resources) > 1 and "*/*" in resources:
        errs.append(invalid_go(path, go_string_slice(resources), "if '*/*' is present, must not specify other "
                                                                 "resources"))
    if "*" in resources and plain:
        errs.append(invalid_go(path, go_string_slice(resources), "if '*' is present, must not specify other "
                                                                 "resources without subresources"))
    return errs


def _admission_review_versions(versions: Any, path: str) -> list[FieldError]:
    versions = [str(v) for v in as_list(versions)]
    if not versions:
        return [required(path, f"must specify one of {', '.join(ADMISSION_REVIEW_VERSIONS)}")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        errs += [invalid_value(f"{path}[{i}]", version, m) for m in names.is_dns1035_label(version)]
        if version in seen:
            errs.append(duplicate(f"{path}[{i}]", version))
        seen.add(version)
    if not seen & set(ADMISSION_REVIEW_VERSIONS):
        errs.append(invalid_go(path, go_string_slice(versions),
                               f"must include at least one of {', '.join(ADMISSION_REVIEW_VERSIONS)}"))
    return errs


def _client_config(config: Any, path: str) -> list[FieldError]:
    config = config if isinstance(config, dict) else {}
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [required(path, "exactly one of url or service is required")]
    if url is not None:
        return _url(str(url), f"{path}.url")
    return _service(service if isinstance(service, dict) else {}, f"{path}.service")


def _url(url: str, path: str) -> list[FieldError]:
    try:
        parts = urlsplit(url)
    except ValueError as err:
        return [required(path, f"url must be a valid URL: {err}{_URL_FORM}")]
    errs: list[FieldError] = []
    if parts.scheme != "https":
        errs.append(invalid_value(path, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    if not parts.netloc:
        errs.append(invalid_value(path, "", "host must be specified" + _URL_FORM))
    if "@" in parts.netloc:
        errs.append(invalid_value(path, parts.netloc.rpartition("@")[0], "user information is not permitted in "
                                                                        "the URL"))
    if parts.fragment:
        errs.append(invalid_value(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        errs.append(invalid_value(path, parts.query, "query parameters are not permitted in the URL"))
    return errs


def _service(service: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not service.get("name"):
        errs.append(required(f"{path}.name", "service name is required"))
    if not service.get("namespace"):
        errs.append(required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port", 443)
    if isinstance(port, int) and names.is_valid_port_num(port):
        errs.append(invalid_value(f"{path}.port", port,
                                  "port is not valid: " + ", ".join(names.is_valid_port_num(port))))
    return errs + _service_path(str(service.get("path") or ""), f"{path}.path")


def _service_path(url_path: str, path: str) -> list[FieldError]:
    if url_path in ("", "/"):
        return []
    if url_path == "//":
        return [invalid_value(path, url_path, "segment[0] may not be empty")]
    errs: list[FieldError] = []
    if not url_path.startswith("/"):
        errs.append(invalid_value(path, url_path, "must start with a '/'"))
    steps = url_path[1:].removesuffix("/").split("/")
    for i, step in enumerate(steps):
        if not step:
            errs.append(invalid_value(path, url_path, f"segment[{i}] may not be empty"))
            continue
        errs += [invalid_value(path, url_path, f"segment[{i}]: {m}") for m in names.is_dns1123_subdomain(step)]
    return errs
