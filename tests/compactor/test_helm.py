"""The sidecar's Helm chart (docs/spec.md §9): lint, render the default and every example values file with the
real `helm`, validate every manifest against Kubernetes' own schemas (offline, kubernetes-validate,
strict), and check what the chart promises: one replica, Recreate, the data claim mounted, the config
checksum on the pod, probes, resources, a locked-down security context, a schema that refuses bad
values, a Spark driver pod template with the sidecar next to the driver, and the volume's two users
(Spark's uid 185, the sidecar's 10001) sharing one group: the executors' pod template mounts the volume
too, every pod that mounts it sets the same fsGroup.

Helm comes from $SEGLOG_HELM, the cache `.ci/helm.sh` installs into, or PATH.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from seglog.compactor.config import parse_config
from tests.compactor.pss import restricted_violations

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm"
EXAMPLES = sorted((CHART / "examples").glob("values-*.yaml"))
HELM_VERSION = "v3.17.3"   # as pinned in .ci/helm.sh
K8S_VERSION = "1.33.0"     # native sidecars (restartPolicy on init containers) are in since 1.29


def _helm_binary() -> str:
    pinned = (REPO / ".ci" / "helm.sh").read_text()
    assert f'HELM_VERSION="{HELM_VERSION}"' in pinned, "keep HELM_VERSION in step with .ci/helm.sh"
    candidates = [os.environ.get("SEGLOG_HELM"),
                  str(Path(os.environ.get("SEGLOG_CACHE", REPO / ".cache")) / "helm" / "bin" / "helm"),
                  shutil.which("helm")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    pytest.fail("helm not found: run .ci/helm.sh (it installs helm into .cache/helm) or put helm on PATH")


@pytest.fixture(scope="module")
def helm() -> str:
    return _helm_binary()


def _run(helm: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([helm, *args], capture_output=True, text=True, timeout=120)


def render(helm: str, *values: Path, sets: tuple[str, ...] = (), set_json: tuple[str, ...] = ()) -> list[dict]:
    args = ["template", "seglog", str(CHART), "--namespace", "seglog"]
    for v in values:
        args += ["-f", str(v)]
    for s in sets:
        args += ["--set", s]
    for s in set_json:
        args += ["--set-json", s]
    proc = _run(helm, *args)
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def render_fails(helm: str, *sets: str, set_json: tuple[str, ...] = ()) -> str:
    args = ["template", "seglog", str(CHART)]
    for s in sets:
        args += ["--set", s]
    for s in set_json:
        args += ["--set-json", s]
    proc = _run(helm, *args)
    assert proc.returncode != 0, f"helm template accepted {sets} {set_json}"
    return proc.stderr


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: list[dict], kind: str) -> dict:
    found = by_kind(docs, kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def container(pod_spec: dict, name: str = "compactor") -> dict:
    for c in pod_spec.get("containers", []) + pod_spec.get("initContainers", []):
        if c["name"] == name:
            return c
    raise AssertionError(f"no container {name!r} in {pod_spec}")


def pod_template(docs: list[dict], key: str) -> dict | None:
    for cm in by_kind(docs, "ConfigMap"):
        if key in cm.get("data", {}):
            return yaml.safe_load(cm["data"][key])
    return None


def driver_pod_template(docs: list[dict]) -> dict | None:
    return pod_template(docs, "driver-pod-template.yaml")


def executor_pod_template(docs: list[dict]) -> dict | None:
    return pod_template(docs, "executor-pod-template.yaml")


def assert_locked_down(c: dict, pod_sc: dict) -> None:
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] > 0
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"] and not sc["capabilities"].get("add")
    assert pod_sc.get("runAsNonRoot", True) is True


def assert_sidecar(c: dict, pod_spec: dict, claim: str, mount: str, readiness: bool = True) -> None:
    assert c["args"] == ["--config", "/etc/seglog/compactor.yaml"]
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["livenessProbe"]["httpGet"]["port"] == "http"
    if readiness:
        assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert "http" in ports
    res = c["resources"]
    assert {"cpu", "memory"} <= set(res["requests"]) and "memory" in res["limits"]
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert mounts["data"]["mountPath"] == mount
    assert mounts["config"]["mountPath"] == "/etc/seglog" and mounts["config"]["readOnly"] is True
    assert mounts["tmp"]["mountPath"] == "/tmp"  # the one writable place on a read-only root
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == claim
    assert "emptyDir" in volumes["tmp"]
    assert_locked_down(c, pod_spec.get("securityContext", {}))


VALUES = [None, *EXAMPLES]
IDS = ["default", *[p.stem for p in EXAMPLES]]


def test_examples_exist():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("values", VALUES, ids=IDS)
def test_lint_strict(helm, values):
    args = ["lint", "--strict", str(CHART)] + (["-f", str(values)] if values else [])
    proc = _run(helm, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("values", VALUES, ids=IDS)
def test_renders_valid_kubernetes(helm, values):
    docs = render(helm, *([values] if values else []))
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    for pod in (driver_pod_template(docs), executor_pod_template(docs)):
        if pod is not None:
            kubernetes_validate.validate(pod, K8S_VERSION, strict=True)
    # The configuration the chart renders is one the sidecar itself accepts.
    cm = next(c for c in by_kind(docs, "ConfigMap") if "compactor.yaml" in c["data"])
    cfg = parse_config(yaml.safe_load(cm["data"]["compactor.yaml"]), source="configmap")
    assert cfg.http.host == "0.0.0.0"


@pytest.mark.parametrize("values", VALUES, ids=IDS)
def test_deployment_contract(helm, values):
    docs = render(helm, *([values] if values else []))
    vals = yaml.safe_load(values.read_text()) if values else {}
    deployments = by_kind(docs, "Deployment")
    if vals.get("deployment", {}).get("enabled", True) is False:
        assert not deployments and not by_kind(docs, "Service")
        return
    dep = deployments[0]
    assert len(deployments) == 1
    spec = dep["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]
    assert len(pod["metadata"]["annotations"]["checksum/config"]) == 64
    pod_spec = pod["spec"]
    assert pod_spec["securityContext"]["runAsNonRoot"] is True
    assert pod_spec["automountServiceAccountToken"] is False
    existing = vals.get("persistence", {}).get("existingClaim")
    pvcs = by_kind(docs, "PersistentVolumeClaim")
    if existing:
        claim = existing
        assert not pvcs
    else:
        claim = one(docs, "PersistentVolumeClaim")["metadata"]["name"]
        assert pvcs[0]["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    mount = vals.get("persistence", {}).get("mountPath", "/data")
    c = container(pod_spec)
    assert_sidecar(c, pod_spec, claim, mount)
    svc = one(docs, "Service")
    assert svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
    assert svc["spec"]["ports"][0]["targetPort"] == "http"
    cfg = yaml.safe_load(one_config(docs))
    assert cfg["http"]["port"] == {p["name"]: p["containerPort"] for p in c["ports"]}["http"]
    assert cfg["root"].startswith(mount.rstrip("/") + "/")


def rendered_pods(docs: list[dict]) -> dict[str, dict]:
    """Every pod the chart renders, by where: the Deployment's template and the Spark pod templates."""
    pods = {f"Deployment {d['metadata']['name']}": d["spec"]["template"] for d in by_kind(docs, "Deployment")}
    for key in ("driver-pod-template.yaml", "executor-pod-template.yaml"):
        pod = pod_template(docs, key)
        if pod is not None:
            pods[key] = pod
    return pods


@pytest.mark.parametrize("values", VALUES, ids=IDS)
def test_every_pod_meets_the_restricted_pod_security_standard(helm, values):
    """Issue 37 item 12: every pod the chart renders, for the default values and every example (the Spark driver
    and executor templates included), passes the restricted Pod Security Standard (tests/compactor/pss.py), so it
    is admitted in a namespace labelled pod-security.kubernetes.io/enforce=restricted; the containers the chart
    fills carry cpu and memory requests and a memory limit (Spark fills its own containers' from its conf)."""
    docs = render(helm, *([values] if values else []))
    pods = rendered_pods(docs)
    assert pods
    for where, pod in pods.items():
        assert restricted_violations(pod) == [], where
        for c in pod["spec"].get("initContainers", []) + pod["spec"]["containers"]:
            if c["name"] == "compactor":
                assert {"cpu", "memory"} <= set(c["resources"]["requests"]) and "memory" in c["resources"]["limits"]


def test_restricted_check_names_what_breaks_it():
    """The check itself: a pod that keeps every control passes; each broken control is named, with where."""
    good = {"metadata": {}, "spec": {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "a", "securityContext": {"allowPrivilegeEscalation": False,
                                                         "capabilities": {"drop": ["ALL"]}}}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "x"}}]}}
    assert restricted_violations(good) == []

    def broken(change):
        pod = json.loads(json.dumps(good))
        change(pod["spec"], pod["spec"]["containers"][0])
        return restricted_violations(pod)

    assert broken(lambda s, c: c["securityContext"].pop("allowPrivilegeEscalation")) == ["privilege escalation: containers[a]"]
    assert broken(lambda s, c: c["securityContext"].pop("capabilities")) == ["capabilities (drop ALL): containers[a]"]
    assert broken(lambda s, c: c["securityContext"]["capabilities"].update(add=["SYS_ADMIN"])) == ["capabilities (add): containers[a]"]
    assert broken(lambda s, c: s["securityContext"].pop("runAsNonRoot")) == ["running as non-root: containers[a]"]
    assert broken(lambda s, c: c["securityContext"].update(runAsUser=0)) == ["running as non-root user: containers[a]"]
    assert broken(lambda s, c: s["securityContext"].pop("seccompProfile")) == ["seccomp: containers[a]"]
    assert broken(lambda s, c: c["securityContext"].update(seccompProfile={"type": "Unconfined"})) == ["seccomp: containers[a]"]
    assert broken(lambda s, c: s["volumes"].append({"name": "h", "hostPath": {"path": "/"}})) == ["volume types: volume h (hostPath)"]
    assert broken(lambda s, c: s.update(hostNetwork=True)) == ["host namespaces: spec.hostNetwork"]
    assert broken(lambda s, c: c["securityContext"].update(privileged=True)) == ["privileged: containers[a]"]
    assert broken(lambda s, c: c.update(ports=[{"containerPort": 80, "hostPort": 80}])) == ["host ports: containers[a]"]
    assert broken(lambda s, c: s.update(initContainers=[{"name": "i"}])) == [
        "privilege escalation: initContainers[i]", "capabilities (drop ALL): initContainers[i]"]


def _network_policy(docs: list[dict]) -> dict:
    return one(docs, "NetworkPolicy")


def test_network_policy_admits_only_prometheus_to_the_http_port(helm):
    """Issue 37 item 13: on by default, the sidecar's pods (the Deployment's, the Service's selector) admit ingress
    only at the HTTP port and only from the release namespace's Prometheus pods; a Prometheus elsewhere is named
    with namespaceSelector, other peers (the nodes' addresses, for a CNI that filters the kubelet's probes) with
    extraFrom; egress is left alone. Off, or with no Deployment, there is none."""
    docs = render(helm)
    np = _network_policy(docs)
    kubernetes_validate.validate(np, K8S_VERSION, strict=True)
    dep = one(docs, "Deployment")
    spec = np["spec"]
    assert spec["podSelector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"] == one(docs, "Service")["spec"]["selector"]
    assert spec["policyTypes"] == ["Ingress"]
    assert spec["ingress"] == [{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}],
                                "ports": [{"port": "http", "protocol": "TCP"}]}]
    assert "http" in {p["name"] for p in container(dep["spec"]["template"]["spec"])["ports"]}

    docs = render(helm, set_json=('networkPolicy.prometheus.namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}',
                                  'networkPolicy.extraFrom=[{"ipBlock": {"cidr": "10.0.0.0/16"}}]'))
    np = _network_policy(docs)
    kubernetes_validate.validate(np, K8S_VERSION, strict=True)
    assert np["spec"]["ingress"][0]["from"] == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
         "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
        {"ipBlock": {"cidr": "10.0.0.0/16"}}]
    assert not by_kind(render(helm, sets=("networkPolicy.enabled=false",)), "NetworkPolicy")
    assert not by_kind(render(helm, CHART / "examples" / "values-spark-driver.yaml"), "NetworkPolicy")


def one_config(docs: list[dict]) -> str:
    return next(c for c in by_kind(docs, "ConfigMap") if "compactor.yaml" in c["data"])["data"]["compactor.yaml"]


def _checksum(docs: list[dict]) -> str:
    return one(docs, "Deployment")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]


def test_config_checksum_follows_the_config(helm):
    base = render(helm)
    same = render(helm)
    changed_log = render(helm, set_json=('config.log={"retention.ms": 86400000}',))
    changed_schedule = render(helm, sets=("config.schedule.seal\\.interval\\.ms=2000",))
    changed_port = render(helm, sets=("http.port=9500",))
    unrelated = render(helm, sets=("resources.limits.memory=1Gi",))
    assert _checksum(base) == _checksum(same)
    assert _checksum(unrelated) == _checksum(base)  # a change outside the config does not roll the pod via it
    sums = {_checksum(d) for d in (base, changed_log, changed_schedule, changed_port)}
    assert len(sums) == 4
    assert "retention.ms: 86400000" in one_config(changed_log)
    assert "seal.interval.ms: 2000" in one_config(changed_schedule)


@pytest.mark.parametrize("sets, set_json, complaint", [
    (("replicaCount=2",), (), "replicaCount"),
    (("http.port=-1",), (), "port"),
    (("http.port=70000",), (), "port"),
    (("service.port=0",), (), "port"),
    (("securityContext.readOnlyRootFilesystem=false",), (), "readOnlyRootFilesystem"),
    (("securityContext.allowPrivilegeEscalation=true",), (), "allowPrivilegeEscalation"),
    (("podSecurityContext.runAsUser=0",), (), "runAsUser"),
    (("podSecurityContext.fsGroup=0",), (), "fsGroup"),          # the shared group is never root's
    (("podSecurityContext.fsGroup=null",), (), "fsGroup"),
    (("podSecurityContext.fsGroupChangePolicy=Sometimes",), (), "fsGroupChangePolicy"),
    (("sparkExecutorPodTemplate.enable=true",), (), "enable"),
    ((), ('securityContext.capabilities={"drop": ["NET_RAW"]}',), "drop"),
    (("config.schedule.seal\\.interval\\.ms=5",), (), "seal.interval.ms"),
    (("config.schedule.seal\\.intervl\\.ms=5000",), (), "seal.intervl.ms"),
    (("config.root=relative/path",), (), "root"),
    (("persistence.size=lots",), (), "size"),
    (("replicas=1",), (), "replicas"),  # unknown top-level key (a misspelling of replicaCount)
    (("image.pullPolicy=Sometimes",), (), "pullPolicy"),
    (("sparkSecurityContext.allowPrivilegeEscalation=true",), (), "allowPrivilegeEscalation"),
    ((), ('sparkSecurityContext.capabilities={"drop": []}',), "drop"),
    (("sparkSecurityContext.runAsUser=0",), (), "runAsUser"),
    ((), ('networkPolicy.prometheus.namespaceSelector="monitoring"',), "namespaceSelector"),
    (("networkPolicy.enable=false",), (), "enable"),
])
def test_schema_refuses_bad_values(helm, sets, set_json, complaint):
    err = render_fails(helm, *sets, set_json=set_json)
    assert complaint in err, err


def test_template_refuses_missing_claim_and_root_outside_volume(helm):
    err = render_fails(helm, "persistence.create=false")
    assert "existingClaim" in err
    err = render_fails(helm, "config.root=/elsewhere/log")
    assert "persistence.mountPath" in err


def test_existing_claim_replaces_created_pvc(helm):
    docs = render(helm, sets=("persistence.existingClaim=spark-data",))
    assert not by_kind(docs, "PersistentVolumeClaim")
    pod_spec = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert {v["name"]: v for v in pod_spec["volumes"]}["data"]["persistentVolumeClaim"]["claimName"] == "spark-data"


@pytest.mark.parametrize("native", [True, False])
def test_spark_driver_pod_template(helm, native):
    docs = render(helm, sets=("sparkDriverPodTemplate.enabled=true", f"sparkDriverPodTemplate.nativeSidecar={str(native).lower()}",
                              "persistence.existingClaim=spark-data"))
    pod = driver_pod_template(docs)
    assert pod is not None and pod["kind"] == "Pod"
    kubernetes_validate.validate(pod, K8S_VERSION, strict=True)
    spec = pod["spec"]
    driver = spec["containers"][0]
    assert driver["name"] == "spark-kubernetes-driver"  # Spark fills in the first (or named) container
    assert {m["name"]: m["mountPath"] for m in driver["volumeMounts"]}["data"] == "/data"
    sidecar = container(spec)
    if native:
        assert sidecar in spec["initContainers"] and sidecar["restartPolicy"] == "Always"
        assert [c["name"] for c in spec["containers"]] == ["spark-kubernetes-driver"]
    else:
        assert "initContainers" not in spec
        assert [c["name"] for c in spec["containers"]] == ["spark-kubernetes-driver", "compactor"]
    # No readiness probe in the driver pod: a sidecar that is not the leader must not hold the driver unready.
    assert "readinessProbe" not in sidecar
    assert_sidecar(sidecar, spec, "spark-data", "/data", readiness=False)
    # The sidecar runs as the chart's user even though the driver pod's user is Spark's.
    assert "runAsUser" not in spec.get("securityContext", {})
    assert pod["metadata"]["annotations"]["checksum/config"] == _checksum(docs)
    # The executors write the staged segments: their template comes with the driver's and mounts the volume.
    executors = executor_pod_template(docs)
    assert executors is not None
    assert_spark_pod(executors, "spark-kubernetes-executor", "spark-data", "/data", spec["securityContext"]["fsGroup"])
    assert_spark_pod(pod, "spark-kubernetes-driver", "spark-data", "/data", spec["securityContext"]["fsGroup"])


def assert_spark_pod(pod: dict, name: str, claim: str, mount: str, group: int) -> None:
    """A Spark pod template: its Spark container mounts the data claim at `mount`, the pod joins the shared
    group `group`, and Spark's container runs as its image's user (uid 185)."""
    kubernetes_validate.validate(pod, K8S_VERSION, strict=True)
    spec = pod["spec"]
    spark = spec["containers"][0]
    assert spark["name"] == name
    assert {m["name"]: m["mountPath"] for m in spark["volumeMounts"]}["data"] == mount
    assert {v["name"]: v for v in spec["volumes"]}["data"]["persistentVolumeClaim"]["claimName"] == claim
    sc = spec["securityContext"]
    assert sc["fsGroup"] == group
    assert sc.get("fsGroupChangePolicy") == "OnRootMismatch"   # no recursive chown of the log at each mount
    assert "runAsUser" not in sc and "runAsGroup" not in sc
    # Spark's image's own user, named (the official image declares it by name, which runAsNonRoot cannot check).
    assert spark["securityContext"]["runAsUser"] == spark["securityContext"]["runAsGroup"] == 185


@pytest.mark.parametrize("values", VALUES, ids=IDS)
def test_one_shared_group_for_spark_and_the_sidecar(helm, values):
    """The volume's users as deployed (README, "Running on a cluster"): the sidecar runs as the image's user
    (10001) in the group fsGroup; every Spark pod template the chart renders joins that same group and mounts
    the same claim at the same path; with the driver template comes the executors' (they write the staged
    segments)."""
    docs = render(helm, *([values] if values else []))
    vals = yaml.safe_load(values.read_text()) if values else {}
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    psc = defaults["podSecurityContext"]
    assert psc["runAsUser"] == psc["runAsGroup"] == psc["fsGroup"] == 10001
    mount = vals.get("persistence", {}).get("mountPath", "/data")
    driver, executors = driver_pod_template(docs), executor_pod_template(docs)
    if vals.get("sparkDriverPodTemplate", {}).get("enabled"):
        assert driver is not None and executors is not None
    claim = next(v for v in _volumes(docs) if v["name"] == "data")["persistentVolumeClaim"]["claimName"]
    for pod, name in ((driver, "spark-kubernetes-driver"), (executors, "spark-kubernetes-executor")):
        if pod is not None:
            assert_spark_pod(pod, name, claim, mount, psc["fsGroup"])
    for dep in by_kind(docs, "Deployment"):
        pod_sc = dep["spec"]["template"]["spec"]["securityContext"]
        assert pod_sc["fsGroup"] == psc["fsGroup"] and pod_sc["fsGroupChangePolicy"] == "OnRootMismatch"
        assert container(dep["spec"]["template"]["spec"])["securityContext"]["runAsUser"] == psc["runAsUser"]


def _volumes(docs: list[dict]) -> list[dict]:
    for dep in by_kind(docs, "Deployment"):
        return dep["spec"]["template"]["spec"]["volumes"]
    return (driver_pod_template(docs) or executor_pod_template(docs))["spec"]["volumes"]


def test_notes_render(helm, tmp_path):
    """NOTES.txt renders (helm install --dry-run wants a cluster; render it through a copy of the chart)."""
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    notes = (chart / "templates" / "NOTES.txt").read_text()
    (chart / "templates" / "NOTES.txt").unlink()
    (chart / "templates" / "_notes_under_test.tpl").write_text('{{- define "notes.under.test" -}}\n' + notes + "\n{{- end }}\n")
    (chart / "templates" / "notes-under-test.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata:\n"
        '  notes: {{ include "notes.under.test" . | quote }}\n')
    proc = _run(helm, "template", "seglog", str(chart), "--namespace", "seglog", "--show-only",
                "templates/notes-under-test.yaml", "--set", "sparkDriverPodTemplate.enabled=true")
    assert proc.returncode == 0, proc.stderr
    text = yaml.safe_load(proc.stdout)["data"]["notes"]
    assert "port-forward service/seglog-seglog-compactor 9400:9400" in text
    assert "claim seglog-seglog-compactor-data mounted at /data" in text
    assert "spark.kubernetes.driver.podTemplateFile" in text
    assert "seglog-seglog-compactor-driver-pod-template" in text
    # The executors mount the volume too, and the volume's users share one group.
    assert "spark.kubernetes.executor.podTemplateFile=executor-pod-template.yaml" in text
    assert "seglog-seglog-compactor-executor-pod-template" in text
    assert "must set fsGroup 10001" in text and "uid 185" in text and "chmod 2775" in text


def test_ci_script_renders_every_values_file(tmp_path, helm):
    """`.ci/helm.sh` (run by .ci/run) lints and renders the default and each example."""
    env = dict(os.environ, SEGLOG_HELM=helm, SEGLOG_HELM_OUT=str(tmp_path))
    proc = subprocess.run(["bash", str(REPO / ".ci" / "helm.sh")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rendered = sorted(p.stem for p in tmp_path.glob("*.yaml"))
    assert rendered == sorted(IDS)
    for p in tmp_path.glob("*.yaml"):
        docs = [d for d in yaml.safe_load_all(p.read_text()) if d]
        assert any(d["kind"] == "ConfigMap" for d in docs)


def test_dockerfile_runs_the_sidecar_as_non_root():
    text = (REPO / "Dockerfile").read_text()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    assert lines[0].startswith("FROM python:3.11-slim")
    users = [ln for ln in lines if ln.startswith("USER ")]
    assert users and users[-1].split()[1] not in ("root", "0", "0:0")
    entry = next(ln for ln in lines if ln.startswith("ENTRYPOINT"))
    assert json.loads(entry.split(None, 1)[1]) == ["seglog", "compactor", "run"]
    cmd = next(ln for ln in lines if ln.startswith("CMD"))
    assert json.loads(cmd.split(None, 1)[1]) == ["--config", "/etc/seglog/compactor.yaml"]
    # The chart's runAsUser is the image's user (so file ownership on the volume matches).
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    uid = str(values["podSecurityContext"]["runAsUser"])
    assert uid in users[-1]
