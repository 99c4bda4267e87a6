"""The Pod Security Standards' checks (kube 1.32's `policy/check_*.go`), one small function each.

Each check looks at a pod's metadata and spec (a Pod's, or a pod template's) and returns None when the pod
passes, else a `Violation`: a short reason (`privileged`) and a detail naming what must change
(`container "c" must not set securityContext.privileged=true`). The reasons, details, their singular and
plural forms and the order of names are kube's, because users read them and tools match on them.

`CHECKS` lists every check with kube's check id and level. A restricted check may replace a baseline one
(`overrides`): restricted volumes replace the hostPath check, restricted capabilities and seccomp replace
their baseline forms. `policy.py` orders and runs them. Checks never change the pod.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .levels import BASELINE, RESTRICTED

Obj = dict[str, Any]


@dataclass(frozen=True)
class Violation:
    reason: str
    detail: str = ""


CheckFn = Callable[[Obj, Obj], "Violation | None"]  # (pod metadata, pod spec)


@dataclass(frozen=True)
class Check:
    id: str
    level: str
    run: CheckFn
    overrides: str = ""  # the id of the baseline check this restricted check replaces


# helpers -----------------------------------------------------------------------------------------

def containers(spec: Obj) -> Iterator[Obj]:
    """Init containers, then containers, then ephemeral containers (kube's visiting order)."""
    for field in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(field) or []


def _sc(obj: Obj | None) -> Obj:
    return (obj or {}).get("securityContext") or {}


def _quote(items: list[str]) -> str:
    return ", ".join(f'"{item}"' for item in items)


def _plural(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def _named(names: list[str], singular: str = "container", plural: str = "containers") -> str:
    """`container "a"` or `containers "a", "b"`."""
    return f"{_plural(singular, plural, len(names))} {_quote(names)}"


def _setters(pod_is_bad: bool, bad_containers: list[str]) -> str:
    """Who set a bad value: `pod`, `containers "a", "b"`, or `pod and container "a"`."""
    parts = (["pod"] if pod_is_bad else []) + ([_named(bad_containers)] if bad_containers else [])
    return " and ".join(parts)


def _windows(spec: Obj) -> bool:
    # kube's API validation forbids these Linux-only fields on Windows pods, so the checks let them be unset
    return ((spec.get("os") or {}).get("name")) == "windows"


# baseline ----------------------------------------------------------------------------------------

PROFILE_TYPES = ("RuntimeDefault", "Localhost")  # the seccomp and AppArmor profile types allowed


def _profile_type(sc: Obj, field: str) -> str | None:
    """The type of the profile `field` (seccompProfile, appArmorProfile) sets: "" when it has none, None when
    no profile is set."""
    profile = sc.get(field)
    return None if profile is None else str(profile.get("type") or "")


def _bad_profiles(spec: Obj, field: str) -> tuple[bool, list[str], list[str]]:
    """Whether the pod sets a profile type not allowed, which containers do, and those types (sorted)."""
    pod_type = _profile_type(_sc(spec), field)
    pod_bad = pod_type is not None and pod_type not in PROFILE_TYPES
    values = {pod_type} if pod_bad else set()
    bad_containers = []
    for c in containers(spec):
        kind = _profile_type(_sc(c), field)
        if kind is not None and kind not in PROFILE_TYPES:
            bad_containers.append(c.get("name", ""))
            values.add(kind)
    return pod_bad, bad_containers, sorted(values)


APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


def app_armor_profile(meta: Obj, spec: Obj) -> Violation | None:
    pod_bad, bad_containers, values = _bad_profiles(spec, "appArmorProfile")
    # the deprecated annotations still count: "runtime/default", "localhost/<name>" or empty are allowed
    annotations = sorted(f"{key}={json.dumps(value, ensure_ascii=False)}"
                         for key, value in (meta.get("annotations") or {}).items()
                         if key.startswith(APPARMOR_ANNOTATION) and value
                         and value != "runtime/default" and not str(value).startswith("localhost/"))
    setters = [_setters(pod_bad, bad_containers)] if pod_bad or bad_containers else []
    if annotations:
        setters.append(_plural("annotation", "annotations", len(annotations)))
    if not setters:
        return None
    values += annotations
    return Violation(_plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(values)),
                     f"{' and '.join(setters)} must not set AppArmor profile type to {_quote(values)}")


BASELINE_CAPABILITIES = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})


def capabilities_baseline(meta: Obj, spec: Obj) -> Violation | None:
    bad_containers, added = [], set()
    for c in containers(spec):
        added_here = (_sc(c).get("capabilities") or {}).get("add") or []
        extra = [cap for cap in added_here if cap not in BASELINE_CAPABILITIES]
        if extra:
            bad_containers.append(c.get("name", ""))
            added.update(extra)
    if not bad_containers:
        return None
    return Violation("non-default capabilities", f"{_named(bad_containers)} must not include "
                     f"{_quote(sorted(added))} in securityContext.capabilities.add")


def host_namespaces(meta: Obj, spec: Obj) -> Violation | None:
    shared = [f"{field}=true" for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field) is True]
    return Violation("host namespaces", ", ".join(shared)) if shared else None


def host_path_volumes(meta: Obj, spec: Obj) -> Violation | None:
    names = [v.get("name", "") for v in spec.get("volumes") or [] if v.get("hostPath") is not None]
    return Violation("hostPath volumes", _named(names, "volume", "volumes")) if names else None


def host_ports(meta: Obj, spec: Obj) -> Violation | None:
    bad_containers, ports = [], set()
    for c in containers(spec):
        used = {str(p["hostPort"]) for p in c.get("ports") or [] if p.get("hostPort")}
        if used:
            bad_containers.append(c.get("name", ""))
            ports |= used
    if not bad_containers:
        return None
    uses = _plural("uses", "use", len(bad_containers))
    return Violation("hostPort", f"{_named(bad_containers)} {uses} "
                     f"{_plural('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}")


def privileged(meta: Obj, spec: Obj) -> Violation | None:
    names = [c.get("name", "") for c in containers(spec) if _sc(c).get("privileged") is True]
    if not names:
        return None
    return Violation("privileged", f"{_named(names)} must not set securityContext.privileged=true")


def proc_mount(meta: Obj, spec: Obj) -> Violation | None:
    bad_containers, types = [], set()
    for c in containers(spec):
        mount = _sc(c).get("procMount")
        if mount is not None and mount != "Default":
            bad_containers.append(c.get("name", ""))
            types.add(str(mount))
    if not bad_containers:
        return None
    return Violation("procMount", f"{_named(bad_containers)} must not set securityContext.procMount to "
                     f"{_quote(sorted(types))}")


SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})


def se_linux_options(meta: Obj, spec: Obj) -> Violation | None:
    bad_types: set[str] = set()
    user = role = False

    def bad(options: Obj | None) -> bool:
        nonlocal user, role
        if options is None:
            return False
        kind = str(options.get("type") or "")
        sets_user, sets_role = bool(options.get("user")), bool(options.get("role"))
        if kind not in SELINUX_TYPES:
            bad_types.add(kind)
        user, role = user or sets_user, role or sets_role
        return kind not in SELINUX_TYPES or sets_user or sets_role

    pod_bad = bad(_sc(spec).get("seLinuxOptions"))
    bad_containers = [c.get("name", "") for c in containers(spec) if bad(_sc(c).get("seLinuxOptions"))]
    if not pod_bad and not bad_containers:
        return None
    what = [f"{_plural('type', 'types', len(bad_types))} {_quote(sorted(bad_types))}"] if bad_types else []
    what += (["user may not be set"] if user else []) + (["role may not be set"] if role else [])
    return Violation("seLinuxOptions", f"{_setters(pod_bad, bad_containers)} set forbidden "
                     f"securityContext.seLinuxOptions: {'; '.join(what)}")


def _seccomp_violation(pod_bad: bool, bad_containers: list[str], values: list[str]) -> Violation:
    return Violation("seccompProfile", f"{_setters(pod_bad, bad_containers)} must not set "
                     f"securityContext.seccompProfile.type to {_quote(values)}")


def seccomp_profile_baseline(meta: Obj, spec: Obj) -> Violation | None:
    pod_bad, bad_containers, values = _bad_profiles(spec, "seccompProfile")
    return _seccomp_violation(pod_bad, bad_containers, values) if pod_bad or bad_containers else None


SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"})


def sysctls(meta: Obj, spec: Obj) -> Violation | None:
    names = [str(s.get("name")) for s in _sc(spec).get("sysctls") or [] if s.get("name") not in SAFE_SYSCTLS]
    return Violation("forbidden sysctls", ", ".join(names)) if names else None


def windows_host_process(meta: Obj, spec: Obj) -> Violation | None:
    def host_process(sc: Obj) -> bool:
        return (sc.get("windowsOptions") or {}).get("hostProcess") is True

    bad_containers = [c.get("name", "") for c in containers(spec) if host_process(_sc(c))]
    setters = _setters(host_process(_sc(spec)), bad_containers)
    if not setters:
        return None
    return Violation("hostProcess", f"{setters} must not set securityContext.windowsOptions.hostProcess=true")


# restricted --------------------------------------------------------------------------------------

def allow_privilege_escalation(meta: Obj, spec: Obj) -> Violation | None:
    if _windows(spec):
        return None
    names = [c.get("name", "") for c in containers(spec)
             if _sc(c).get("allowPrivilegeEscalation") is not False]
    if not names:
        return None
    return Violation("allowPrivilegeEscalation != false",
                     f"{_named(names)} must set securityContext.allowPrivilegeEscalation=false")


def capabilities_restricted(meta: Obj, spec: Obj) -> Violation | None:
    if _windows(spec):
        return None
    missing_drop, adding, added = [], [], set()
    for c in containers(spec):
        caps = _sc(c).get("capabilities")
        if caps is None or "ALL" not in (caps.get("drop") or []):
            missing_drop.append(c.get("name", ""))
        extra = [cap for cap in (caps or {}).get("add") or [] if cap != "NET_BIND_SERVICE"]
        if extra:
            adding.append(c.get("name", ""))
            added.update(extra)
    details = ([f'{_named(missing_drop)} must set securityContext.capabilities.drop=["ALL"]'] if missing_drop
               else []) + ([f"{_named(adding)} must not include {_quote(sorted(added))} in "
                            "securityContext.capabilities.add"] if adding else [])
    return Violation("unrestricted capabilities", "; ".join(details)) if details else None


RESTRICTED_VOLUME_SOURCES = frozenset({
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected",
    "secret"})
# the sources kube names in its message; any other is "unknown"
NAMED_VOLUME_SOURCES = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd",
    "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
    "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos")


def restricted_volumes(meta: Obj, spec: Obj) -> Violation | None:
    names, types = [], set()
    for volume in spec.get("volumes") or []:
        if any(volume.get(source) is not None for source in RESTRICTED_VOLUME_SOURCES):
            continue
        names.append(volume.get("name", ""))
        types.add(next((s for s in NAMED_VOLUME_SOURCES if volume.get(s) is not None), "unknown"))
    if not names:
        return None
    uses = _plural("uses", "use", len(names))
    kinds = _plural("restricted volume type", "restricted volume types", len(types))
    return Violation("restricted volume types", f"{_named(names, 'volume', 'volumes')} {uses} {kinds} "
                     f"{_quote(sorted(types))}")


def run_as_non_root(meta: Obj, spec: Obj) -> Violation | None:
    pod_value = _sc(spec).get("runAsNonRoot")
    explicit, implicit = [], []
    for c in containers(spec):
        value = _sc(c).get("runAsNonRoot")
        if value is False:
            explicit.append(c.get("name", ""))
        elif value is None and pod_value is not True:
            implicit.append(c.get("name", ""))
    setters = _setters(pod_value is False, explicit)
    if setters:
        return Violation("runAsNonRoot != true", f"{setters} must not set securityContext.runAsNonRoot=false")
    if implicit:
        return Violation("runAsNonRoot != true",
                         f"pod or {_named(implicit)} must set securityContext.runAsNonRoot=true")
    return None


def run_as_user(meta: Obj, spec: Obj) -> Violation | None:
    def root(sc: Obj) -> bool:
        return type(sc.get("runAsUser")) is int and sc["runAsUser"] == 0

    setters = _setters(root(_sc(spec)), [c.get("name", "") for c in containers(spec) if root(_sc(c))])
    return Violation("runAsUser=0", f"{setters} must not set runAsUser=0") if setters else None


def seccomp_profile_restricted(meta: Obj, spec: Obj) -> Violation | None:
    if _windows(spec):
        return None
    pod_bad, bad_containers, values = _bad_profiles(spec, "seccompProfile")
    if pod_bad or bad_containers:
        return _seccomp_violation(pod_bad, bad_containers, values)
    if _profile_type(_sc(spec), "seccompProfile") is not None:  # a good pod-level profile covers all
        return None
    unset = [c.get("name", "") for c in containers(spec) if _profile_type(_sc(c), "seccompProfile") is None]
    if not unset:
        return None
    return Violation("seccompProfile", f'pod or {_named(unset)} must set securityContext.seccompProfile.type '
                     'to "RuntimeDefault" or "Localhost"')


CHECKS = (
    Check("appArmorProfile", BASELINE, app_armor_profile),
    Check("capabilities_baseline", BASELINE, capabilities_baseline),
    Check("hostNamespaces", BASELINE, host_namespaces),
    Check("hostPathVolumes", BASELINE, host_path_volumes),
    Check("hostPorts", BASELINE, host_ports),
    Check("privileged", BASELINE, privileged),
    Check("procMount", BASELINE, proc_mount),
    Check("seLinuxOptions", BASELINE, se_linux_options),
    Check("seccompProfile_baseline", BASELINE, seccomp_profile_baseline),
    Check("sysctls", BASELINE, sysctls),
    Check("windowsHostProcess", BASELINE, windows_host_process),
    Check("allowPrivilegeEscalation", RESTRICTED, allow_privilege_escalation),
    Check("capabilities_restricted", RESTRICTED, capabilities_restricted, overrides="capabilities_baseline"),
    Check("restrictedVolumes", RESTRICTED, restricted_volumes, overrides="hostPathVolumes"),
    Check("runAsNonRoot", RESTRICTED, run_as_non_root),
    Check("runAsUser", RESTRICTED, run_as_user),
    Check("seccompProfile_restricted", RESTRICTED, seccomp_profile_restricted,
          overrides="seccompProfile_baseline"),
)
