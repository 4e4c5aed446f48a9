"""The restricted Pod Security Standard as a check on a pod spec (Kubernetes' "Pod Security Standards" page,
its Baseline and Restricted tables, as of v1.33): `restricted_violations(pod)` names every control a pod
breaks, where. The chart's tests run it over every pod the chart renders (tests/compactor/test_helm.py).
Only the policy's own fields: what a control leaves undefined is allowed, as the admission plugin allows it."""
from __future__ import annotations

# Restricted: the only volume types allowed (HostPath, and every other type, is refused).
VOLUME_TYPES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
# Baseline: the "safe" sysctls.
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"}
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
SECCOMP_TYPES = {"RuntimeDefault", "Localhost"}
APPARMOR_TYPES = {"RuntimeDefault", "Localhost"}


def _containers(spec: dict) -> list[tuple[str, dict]]:
    return [(f"{kind}[{c.get('name')}]", c) for kind in ("initContainers", "containers", "ephemeralContainers")
            for c in spec.get(kind) or []]


def restricted_violations(pod: dict) -> list[str]:
    """Every restricted-PSS control `pod` (a Pod, or a pod template's {metadata, spec}) breaks, as
    "control: where"."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    psc = spec.get("securityContext") or {}
    out: list[str] = []
    containers = _containers(spec)

    # Baseline.
    for ns in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(ns):
            out.append(f"host namespaces: spec.{ns}")
    if (psc.get("windowsOptions") or {}).get("hostProcess"):
        out.append("HostProcess: spec.securityContext")
    for key, value in (meta.get("annotations") or {}).items():
        if key.startswith("container.apparmor.security.beta.kubernetes.io/") and not (
                value == "runtime/default" or value.startswith("localhost/")):
            out.append(f"AppArmor: annotation {key}")
    for where, sc in [("spec.securityContext", psc)] + [(w, c.get("securityContext") or {}) for w, c in containers]:
        if "appArmorProfile" in sc and sc["appArmorProfile"].get("type") not in APPARMOR_TYPES:
            out.append(f"AppArmor: {where}")
        se = sc.get("seLinuxOptions") or {}
        if se.get("type", "") not in SELINUX_TYPES or se.get("user") or se.get("role"):
            out.append(f"SELinux: {where}")
        if (sc.get("windowsOptions") or {}).get("hostProcess"):
            out.append(f"HostProcess: {where}")
    for s in psc.get("sysctls") or []:
        if s.get("name") not in SAFE_SYSCTLS:
            out.append(f"sysctls: {s.get('name')}")
    for where, c in containers:
        sc = c.get("securityContext") or {}
        if sc.get("privileged"):
            out.append(f"privileged: {where}")
        if sc.get("procMount", "Default") != "Default":
            out.append(f"/proc mount type: {where}")
        for port in c.get("ports") or []:
            if port.get("hostPort"):
                out.append(f"host ports: {where}")

    # Restricted.
    for v in spec.get("volumes") or []:
        kinds = set(v) - {"name"}
        if not kinds <= VOLUME_TYPES:
            out.append(f"volume types: volume {v.get('name')} ({', '.join(sorted(kinds - VOLUME_TYPES))})")
    pod_non_root = psc.get("runAsNonRoot") is True
    pod_seccomp = (psc.get("seccompProfile") or {}).get("type")
    if pod_seccomp is not None and pod_seccomp not in SECCOMP_TYPES:
        out.append("seccomp: spec.securityContext")
    if psc.get("runAsUser") == 0:
        out.append("running as non-root user: spec.securityContext.runAsUser")
    for where, c in containers:
        sc = c.get("securityContext") or {}
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"privilege escalation: {where}")
        if sc.get("runAsNonRoot") is False or not (pod_non_root or sc.get("runAsNonRoot") is True):
            out.append(f"running as non-root: {where}")
        if sc.get("runAsUser") == 0:
            out.append(f"running as non-root user: {where}")
        seccomp = (sc.get("seccompProfile") or {}).get("type")
        if (seccomp is not None and seccomp not in SECCOMP_TYPES) or (seccomp is None and pod_seccomp is None):
            out.append(f"seccomp: {where}")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            out.append(f"capabilities (drop ALL): {where}")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            out.append(f"capabilities (add): {where}")
    return out
