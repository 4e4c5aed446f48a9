"""The chart's monitoring (issue 42): a ServiceMonitor, a PrometheusRule with the sidecar's alerts and a Grafana
dashboard ConfigMap, each optional and off by default; and every metric their queries read is one a live sidecar
exports (its /metrics, parsed), or one named here as another exporter's (the kubelet's volume stats, Prometheus' up)."""
from __future__ import annotations

import json
import re
import time

import kubernetes_validate
import pytest
import yaml

from seglog.indexer.commit_log import CommitLog
from seglog.indexer.consumer_positions import consumers_dir
from seglog.indexer.log import Log
from seglog.indexer.codec.records import Record
from tests.compactor.test_compactor_process import Sidecar, free_port, wait_until
from tests.compactor.test_helm import K8S_VERSION, _helm_binary, by_kind, one, render, render_fails

ALL_ON = ("serviceMonitor.enabled=true", "prometheusRule.enabled=true", "dashboard.enabled=true")
ALERTS = {"SeglogSidecarDown": "sidecarDown", "SeglogNoLeader": "notLeader", "SeglogJobFailing": "jobFailing",
          "SeglogRetentionBlocked": "retentionBlocked", "SeglogConsumerLagGrowing": "lagGrowing",
          "SeglogVolumeFilling": "volumeFilling"}
# Metrics other exporters give (never the sidecar's): Prometheus' own, the kubelet's volume stats.
OTHER_EXPORTERS = {"up", "kubelet_volume_stats_available_bytes", "kubelet_volume_stats_capacity_bytes"}
# PromQL's words that are not metric names (functions, aggregations, operators, modifiers).
PROMQL_WORDS = {"sum", "max", "min", "count", "avg", "by", "without", "and", "or", "unless", "on", "ignoring",
                "group_left", "group_right", "rate", "increase", "delta", "deriv", "absent", "histogram_quantile",
                "time", "offset", "bool", "le"}


@pytest.fixture(scope="module")
def helm() -> str:
    return _helm_binary()


def dashboard(docs: list[dict]) -> tuple[dict, dict]:
    cm = next(c for c in by_kind(docs, "ConfigMap") if "seglog.json" in c.get("data", {}))
    return cm, json.loads(cm["data"]["seglog.json"])


def dashboard_exprs(dash: dict) -> list[str]:
    return [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]


def rule_exprs(docs: list[dict]) -> dict[str, str]:
    rule = one(docs, "PrometheusRule")
    return {r["alert"]: r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: its identifiers once label matchers ({...}), ranges ([...]),
    quoted strings and `by (...)` groupings are taken out, less PromQL's own words and numbers."""
    text = re.sub(r'"[^"]*"', "", expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", " ", text)
    return {w for w in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text) if w not in PROMQL_WORDS}


def test_monitoring_is_off_by_default(helm):
    docs = render(helm)
    assert not by_kind(docs, "ServiceMonitor") and not by_kind(docs, "PrometheusRule")
    assert not any("seglog.json" in c.get("data", {}) for c in by_kind(docs, "ConfigMap"))


def test_service_monitor_rules_and_dashboard_render(helm):
    docs = render(helm, sets=ALL_ON + ("serviceMonitor.labels.release=kps",))
    svc = one(docs, "Service")
    sm = one(docs, "ServiceMonitor")
    assert sm["metadata"]["labels"]["release"] == "kps"
    selected = sm["spec"]["selector"]["matchLabels"]
    assert selected.items() <= svc["metadata"]["labels"].items()
    assert sm["spec"]["endpoints"][0]["port"] in {p["name"] for p in svc["spec"]["ports"]}
    assert sm["spec"]["endpoints"][0]["path"] == "/metrics"
    assert sm["spec"]["namespaceSelector"] == {"matchNames": ["seglog"]}
    exprs = rule_exprs(docs)
    assert set(exprs) == set(ALERTS)
    job = f'job="{svc["metadata"]["name"]}", namespace="seglog"'     # the labels a ServiceMonitor scrape gives
    for name, expr in exprs.items():
        if name != "SeglogVolumeFilling":
            assert job in expr, (name, expr)
    claim = one(docs, "PersistentVolumeClaim")["metadata"]["name"]
    assert f'persistentvolumeclaim="{claim}"' in exprs["SeglogVolumeFilling"]
    cm, dash = dashboard(docs)
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    kubernetes_validate.validate(cm, K8S_VERSION, strict=True)
    assert dash["uid"] and dash["panels"]
    for expr in dashboard_exprs(dash):
        assert job in expr, expr
    # the dashboard's label is configurable (Grafana's sidecar.dashboards.label), annotations too (its folder)
    docs = render(helm, sets=("dashboard.enabled=true", "dashboard.labels.grafana_dashboard=null"),
                  set_json=('dashboard.labels={"my_dashboards": "yes"}', 'dashboard.annotations={"grafana_folder": "seglog"}'))
    cm, _ = dashboard(docs)
    assert cm["metadata"]["labels"]["my_dashboards"] == "yes" and "grafana_dashboard" not in cm["metadata"]["labels"]
    assert cm["metadata"]["annotations"] == {"grafana_folder": "seglog"}


@pytest.mark.parametrize("alert, key", sorted(ALERTS.items()))
def test_each_alert_is_optional(helm, alert, key):
    docs = render(helm, sets=("prometheusRule.enabled=true", f"prometheusRule.alerts.{key}.enabled=false"))
    assert set(rule_exprs(docs)) == set(ALERTS) - {alert}


@pytest.mark.parametrize("sets, set_json, complaint", [
    (("prometheusRule.alerts.jobFailing.failures=0",), (), "failures"),
    (("prometheusRule.alerts.lagGrowing.window=soon",), (), "window"),
    (("prometheusRule.alerts.volumeFilling.freeRatio=1.5",), (), "freeRatio"),
    (("prometheusRule.alerts.sidecarDown.severity=a b",), (), "severity"),
    (("prometheusRule.alerts.lagGrwing.enabled=true",), (), "lagGrwing"),
    (("serviceMonitor.interval=often",), (), "interval"),
    (("dashboard.labels.grafana_dashboard=null",), (), "labels"),       # a dashboard no sidecar would load
    (("config.consumer.idle\\.forget\\.ms=5",), (), "idle.forget.ms"),
])
def test_schema_refuses_bad_monitoring_values(helm, sets, set_json, complaint):
    err = render_fails(helm, *sets, set_json=set_json)
    assert complaint in err, err


def test_the_consumer_config_reaches_the_sidecar(helm):
    docs = render(helm, set_json=('config.consumer={"lag.interval.ms": 5000, "idle.forget.ms": 86400000}',))
    cm = next(c for c in by_kind(docs, "ConfigMap") if "compactor.yaml" in c["data"])
    assert yaml.safe_load(cm["data"]["compactor.yaml"])["consumer"] == {"lag.interval.ms": 5000, "idle.forget.ms": 86400000}


def test_alerts_and_dashboard_read_metrics_a_live_sidecar_exports(helm, tmp_path):
    docs = render(helm, sets=ALL_ON)
    wanted = set()
    for expr in [*rule_exprs(docs).values(), *dashboard_exprs(dashboard(docs)[1])]:
        wanted |= metric_names(expr)
    assert {"seglog_consumer_lag_records", "seglog_compactor_job_failures_total", "up"} <= wanted   # the parse sees them

    # a root with a committed partition and a streaming query's position: every family has a series
    root = tmp_path / "root"
    with Log.open(root / "t-0", {"segment.bytes": 1024}) as log:
        log.append([Record(value=b"v%d" % i, timestamp=int(time.time() * 1000)) for i in range(5)])
        log.flush()
    CommitLog(root, "t").commit("tests", 0, {0: 5})
    consumers_dir(root).mkdir(parents=True)
    qid = "3deca994-f2e6-4aa7-bef2-e98aa0858b0c"
    (consumers_dir(root) / f"{qid}.json").write_text(json.dumps(
        {"format": 1, "query_id": qid, "name": "q", "checkpoint": "file:/cp/sources/0", "offsets": {"t": {"0": 2}},
         "committed_ms": int(time.time() * 1000)}))
    port = free_port()
    config = tmp_path / "sidecar.yaml"
    config.write_text(yaml.safe_dump({"root": str(root), "http": {"host": "127.0.0.1", "port": port},
                                      "consumer": {"lag.interval.ms": 200}}))
    sidecar = Sidecar(tmp_path, config, port)
    try:
        sidecar.wait_for("/readyz", 200)
        wait_until(lambda: sidecar.metric("seglog_consumer_lag_records", query_id=qid) == 3
                   and sidecar.metric("seglog_partition_retention_blocked", topic="t") is not None,
                   what="the lag and partition series")
        from prometheus_client.parser import text_string_to_metric_families

        _, text = sidecar.get("/metrics")
        exported = {s.name for fam in text_string_to_metric_families(text) for s in fam.samples}
    finally:
        assert sidecar.stop() == 0
    missing = sorted(wanted - exported - OTHER_EXPORTERS)
    assert missing == [], f"the chart's alerts or dashboard read metrics no sidecar exports: {missing}"
