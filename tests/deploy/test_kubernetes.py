#!/usr/bin/env python3
"""deploy/kubernetes checked as a cluster would check it.

  schemas  every object against the real schemas: built-in kinds (DaemonSet, Service) with kubernetes-validate's
           bundled Kubernetes schemas (strict: unknown fields are errors), ServiceMonitor and PrometheusRule with
           prometheus-operator's published CRD schemas (tests/deploy/schemas/) as the API server applies them;
           names, label keys and values, and port names as the API server's validation has them
  objects  the objects fit together: the Service selects the DaemonSet's pods and targets a container port, the
           ServiceMonitor selects the Service and its port, and its job label is the job the alert rules watch
  rules    the PrometheusRule's spec.groups are exactly deploy/prometheus/gpusqueeze-rules.yml's groups, and pass
           `promtool check rules` and the rule unit tests of deploy/prometheus/gpusqueeze-rules.test.yml

Usage: test_kubernetes.py [schemas|objects|rules ...]   (all three without arguments)
       test_kubernetes.py --sync-rules                   (copies the rules file's groups into the PrometheusRule)
Exit 0 passed, 1 failed, 77 skipped (a tool or Python module missing: the line says which package provides it).
"""

import copy
import difflib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deploy_common import ROOT, fail, need_module, run_checks, skip  # noqa: E402

K8S_DIR = ROOT / "deploy/kubernetes"
MANIFESTS = [K8S_DIR / "gpusqueeze-exporter.yaml", K8S_DIR / "gpusqueeze-monitoring.yaml"]
MONITORING = K8S_DIR / "gpusqueeze-monitoring.yaml"
RULES = ROOT / "deploy/prometheus/gpusqueeze-rules.yml"
RULES_TEST = ROOT / "deploy/prometheus/gpusqueeze-rules.test.yml"
SCHEMAS = Path(__file__).resolve().parent / "schemas"
CRD_SCHEMAS = {  # (apiVersion, kind) -> the CRD's openAPIV3Schema, as published
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SCHEMAS / "monitoring.coreos.com_v1_servicemonitor.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): SCHEMAS / "monitoring.coreos.com_v1_prometheusrule.json",
}
OLDEST_KUBERNETES = "1.28"  # the oldest minor release validated against, with the newest kubernetes-validate bundles
SYNC_HINT = "python3 tests/deploy/test_kubernetes.py --sync-rules"

yaml = need_module("yaml", "PyYAML")


def load_objects():
    """Every object of the manifests, as (file name, object)."""
    out = []
    for path in MANIFESTS:
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc is not None:
                    out.append((path.name, doc))
    return out


def objects_of(kind):
    return [o for _, o in load_objects() if o.get("kind") == kind]


def one(kind):
    found = objects_of(kind)
    if len(found) != 1:
        fail(f"expected one {kind} in deploy/kubernetes, found {len(found)}")
    return found[0]


def where(obj):
    return f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"


# --- schemas ---------------------------------------------------------------------------------------------------------

def kubernetes_versions(kv):
    """The oldest bundled release at or after OLDEST_KUBERNETES, and the newest."""
    latest = kv.latest_version()
    try:
        from packaging.version import Version
        bundled = [v for v in kv.utils.all_versions() if Version(v) >= Version(OLDEST_KUBERNETES)]
        oldest = bundled[0] if bundled else latest
    except (AttributeError, ImportError):
        oldest = latest
    majmin = lambda v: ".".join(v.split(".")[:2])  # noqa: E731
    return sorted({majmin(oldest), majmin(latest)}, key=lambda v: tuple(int(x) for x in v.split(".")))


def strict_schema(schema):
    """The CRD schema as the API server applies it with strict field validation (what `kubectl apply` asks for):
    objects with properties reject unknown fields unless they preserve them."""
    s = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if ("properties" in node and "additionalProperties" not in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")):
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(s)
    return s


def crd_validator(jsonschema, schema):
    """A validator that also enforces the structural-schema list rules: x-kubernetes-list-type map (unique
    x-kubernetes-list-map-keys) and set (unique items)."""

    def list_type(validator, value, instance, schema_node):
        if not isinstance(instance, list):
            return
        if value == "set":
            seen = []
            for item in instance:
                if item in seen:
                    yield jsonschema.ValidationError(f"duplicate item {item!r} in a list of type set")
                seen.append(item)
        elif value == "map":
            keys = schema_node.get("x-kubernetes-list-map-keys", [])
            seen = set()
            for item in instance:
                key = tuple(json.dumps(item.get(k), sort_keys=True) for k in keys) if isinstance(item, dict) else ()
                if key in seen:
                    shown = ", ".join(f"{k}={item.get(k)!r}" for k in keys)
                    yield jsonschema.ValidationError(f"two entries with {shown} in a list keyed by {keys}")
                seen.add(key)

    cls = jsonschema.validators.extend(jsonschema.Draft7Validator, {"x-kubernetes-list-type": list_type})
    return cls(strict_schema(schema))


DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = re.compile(rf"^{DNS1123_LABEL}(\.{DNS1123_LABEL})*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
PORT_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")


def label_problems(labels, what):
    problems = []
    for key, value in (labels or {}).items():
        prefix, _, name = key.rpartition("/")
        if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
            problems.append(f"{what}: label key prefix {prefix!r} is not a DNS subdomain")
        if len(name) > 63 or not QUALIFIED_NAME.match(name):
            problems.append(f"{what}: label key {key!r} is not a qualified name")
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            problems.append(f"{what}: label value {value!r} of {key!r} is not a valid label value")
    return problems


def api_server_rules(obj):
    """What the API server's validation rejects beyond the JSON schemas: names, label syntax, port names."""
    problems = []
    meta = obj.get("metadata", {})
    name = meta.get("name", "")
    if obj.get("kind") == "Service":
        if len(name) > 63 or not DNS1035_LABEL.match(name):
            problems.append(f"{where(obj)}: a Service name must be a DNS-1035 label")
    elif len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        problems.append(f"{where(obj)}: the name must be a DNS-1123 subdomain")
    problems += label_problems(meta.get("labels"), where(obj))
    spec = obj.get("spec", {})
    problems += label_problems(spec.get("selector", {}).get("matchLabels"), f"{where(obj)} selector")
    if obj.get("kind") == "Service":
        problems += label_problems(spec.get("selector"), f"{where(obj)} selector")
    template = spec.get("template", {})
    problems += label_problems(template.get("metadata", {}).get("labels"), f"{where(obj)} pod template")
    ports = [p for c in template.get("spec", {}).get("containers", []) for p in c.get("ports", [])]
    ports += spec.get("ports", []) if obj.get("kind") == "Service" else []
    for p in ports:
        n = p.get("name", "")
        if n and (len(n) > 15 or not PORT_NAME.match(n) or "--" in n or not re.search("[a-z]", n)):
            problems.append(f"{where(obj)}: port name {n!r} is not an IANA service name")
    return problems


def builtin_kinds_pass_kubernetes_schemas():
    kv = need_module("kubernetes_validate", "kubernetes-validate")
    versions = kubernetes_versions(kv)
    checked = []
    for file, obj in load_objects():
        if (obj.get("apiVersion"), obj.get("kind")) in CRD_SCHEMAS:
            continue
        for v in versions:
            try:
                kv.validate(obj, v, strict=True)
            except kv.ValidationError as e:
                path = ".".join(str(p) for p in e.path)
                fail(f"{file}: {where(obj)} against Kubernetes {v}: {path}: {e.message}")
            except kv.SchemaNotFoundError:
                fail(f"{file}: {where(obj)}: no Kubernetes {v} schema for {obj.get('apiVersion')} {obj.get('kind')}")
        checked.append(where(obj))
    if not checked:
        fail("no built-in object found")
    return f"{', '.join(checked)} against Kubernetes {' and '.join(versions)} (kubernetes-validate, strict)"


def custom_resources_pass_crd_schemas():
    jsonschema = need_module("jsonschema", "jsonschema")
    kv = need_module("kubernetes_validate", "kubernetes-validate")
    version = kubernetes_versions(kv)[-1]
    checked = []
    for file, obj in load_objects():
        key = (obj.get("apiVersion"), obj.get("kind"))
        if key not in CRD_SCHEMAS:
            continue
        with open(CRD_SCHEMAS[key]) as f:
            validator = crd_validator(jsonschema, json.load(f))
        errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.path))
        if errors:
            fail(f"{file}: {where(obj)} against prometheus-operator's {key[1]} schema:\n" + "\n".join(
                f"    {'.'.join(str(p) for p in e.path) or '(top)'}: {e.message}" for e in errors))
        # metadata is ObjectMeta for every kind; the CRD schema says only `type: object`
        try:
            kv.validate({"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj.get("metadata", {})}, version,
                        strict=True)
        except kv.ValidationError as e:
            fail(f"{file}: {where(obj)}: {'.'.join(str(p) for p in e.path)}: {e.message}")
        checked.append(where(obj))
    if len(checked) != len(CRD_SCHEMAS):
        fail(f"expected one object of each of {sorted(k for _, k in CRD_SCHEMAS)}, validated {checked}")
    return ", ".join(checked) + " (prometheus-operator v0.93.0 CRD schemas, strict)"


def every_object_has_a_schema():
    known = {"DaemonSet", "Service"}
    for file, obj in load_objects():
        if (obj.get("apiVersion"), obj.get("kind")) not in CRD_SCHEMAS and obj.get("kind") not in known:
            fail(f"{file}: {obj.get('apiVersion')} {obj.get('kind')} has no schema here: add it to this test")
    return None


def names_labels_and_ports_are_valid():
    problems = [p for _, obj in load_objects() for p in api_server_rules(obj)]
    if problems:
        fail("\n    " + "\n    ".join(problems))
    return None


# --- objects ---------------------------------------------------------------------------------------------------------

def rules_job():
    """The job label the generated rules expect on the exporter's `up` series (GsqExporterDown)."""
    with open(RULES) as f:
        for group in yaml.safe_load(f)["groups"]:
            for rule in group["rules"]:
                m = re.search(r'\bup\{job="([^"]+)"\}', rule.get("expr", ""))
                if m:
                    return m.group(1)
    fail(f"{RULES.relative_to(ROOT)}: no rule watches up{{job=...}}")


def service_selects_the_daemonset_pods():
    ds, svc = one("DaemonSet"), one("Service")
    pod_labels = ds["spec"]["template"]["metadata"].get("labels", {})
    selector = svc["spec"].get("selector", {})
    if not selector or any(pod_labels.get(k) != v for k, v in selector.items()):
        fail(f"Service selector {selector} does not select the DaemonSet's pods {pod_labels}")
    container_ports = {p.get("name"): p["containerPort"] for c in ds["spec"]["template"]["spec"]["containers"]
                       for p in c.get("ports", [])}
    for port in svc["spec"]["ports"]:
        target = port.get("targetPort", port["port"])
        if target not in container_ports and target not in container_ports.values():
            fail(f"Service port {port.get('name')} targets {target!r}, not a container port {container_ports}")
    return f"selector {selector}, ports {[p.get('name') for p in svc['spec']['ports']]}"


def servicemonitor_selects_the_service():
    svc, sm = one("Service"), one("ServiceMonitor")
    match = sm["spec"]["selector"].get("matchLabels", {})
    labels = svc["metadata"].get("labels", {})
    if not match or any(labels.get(k) != v for k, v in match.items()):
        fail(f"ServiceMonitor selector {match} does not select the Service's labels {labels}")
    port_names = {p.get("name") for p in svc["spec"]["ports"]}
    for ep in sm["spec"]["endpoints"]:
        if ep.get("port") not in port_names:
            fail(f"ServiceMonitor endpoint port {ep.get('port')!r} is not a Service port {sorted(port_names)}")
    return f"selector {match}, port {[ep.get('port') for ep in sm['spec']['endpoints']]}"


def servicemonitor_job_is_the_rules_job():
    svc, sm = one("Service"), one("ServiceMonitor")
    job_label = sm["spec"].get("jobLabel")
    # without jobLabel prometheus-operator names the job after the Service
    job = svc["metadata"].get("labels", {}).get(job_label) if job_label else svc["metadata"]["name"]
    want = rules_job()
    if job != want:
        fail(f"scrapes get job={job!r} (jobLabel {job_label!r} on the Service), the rules watch up{{job={want!r}}}")
    return f"job={job}"


def servicemonitor_puts_the_node_name_in_node_and_hostname():
    sm = one("ServiceMonitor")
    for ep in sm["spec"]["endpoints"]:
        relabel = ep.get("relabelings", [])
        if not any(r.get("sourceLabels") == ["__meta_kubernetes_pod_node_name"] and r.get("targetLabel") == "node"
                   for r in relabel):
            fail(f"endpoint {ep.get('port')}: no relabeling of __meta_kubernetes_pod_node_name into `node`")
        metric = ep.get("metricRelabelings", [])
        if not any(r.get("sourceLabels") == ["node"] and r.get("targetLabel") == "hostname" for r in metric):
            fail(f"endpoint {ep.get('port')}: no metric relabeling of `node` into `hostname`")
        if not re.fullmatch(r"\d+s", ep.get("interval", "")):
            fail(f"endpoint {ep.get('port')}: interval {ep.get('interval')!r}")
    return None


# --- rules -----------------------------------------------------------------------------------------------------------

def rule_groups():
    with open(RULES) as f:
        return yaml.safe_load(f)["groups"]


def prometheusrule_groups_are_the_rules_files():
    got, want = one("PrometheusRule")["spec"].get("groups"), rule_groups()
    if got != want:
        a = json.dumps(want, indent=1, sort_keys=True).splitlines()
        b = json.dumps(got, indent=1, sort_keys=True).splitlines()
        diff = "\n".join(difflib.unified_diff(a, b, "gpusqueeze-rules.yml", "PrometheusRule", lineterm="", n=2))
        fail(f"the PrometheusRule's groups differ from {RULES.relative_to(ROOT)} (run: {SYNC_HINT}):\n{diff}")
    return f"{len(got)} groups, {sum(len(g['rules']) for g in got)} rules"


def prometheusrule_groups_pass_promtool():
    promtool = shutil.which("promtool")
    groups = one("PrometheusRule")["spec"]["groups"]
    with tempfile.TemporaryDirectory(prefix="gsq-promrule-") as tmp:
        # the rule unit tests name gpusqueeze-rules.yml: the PrometheusRule's groups stand in for it
        with open(Path(tmp) / "gpusqueeze-rules.yml", "w") as f:
            yaml.safe_dump({"groups": groups}, f, sort_keys=False, width=1000)
        shutil.copy(RULES_TEST, Path(tmp) / "gpusqueeze-rules.test.yml")
        for args in (["check", "rules", "gpusqueeze-rules.yml"], ["test", "rules", "gpusqueeze-rules.test.yml"]):
            r = subprocess.run([promtool, *args], cwd=tmp, capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"promtool {' '.join(args)} on the PrometheusRule's groups:\n{r.stdout}{r.stderr}")
    return "promtool check rules and test rules"


# --- --sync-rules ----------------------------------------------------------------------------------------------------

def sync_rules():
    """Rewrites the PrometheusRule's groups as deploy/prometheus/gpusqueeze-rules.yml's, comments included, indented
    under spec.groups. Everything before `  groups:` of the PrometheusRule (the last object of the file) stays."""
    text = MONITORING.read_text()
    at = text.rfind("\nkind: PrometheusRule\n")
    head_end = text.find("\n  groups:\n", at)
    if at < 0 or head_end < 0:
        sys.exit(f"{MONITORING}: no PrometheusRule with `  groups:` under spec")
    head = text[: head_end + len("\n  groups:\n")]
    lines = RULES.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("groups:"))
    body = "".join(("  " + line if line.strip() else "") + "\n" for line in lines[start + 1:])
    MONITORING.write_text(head + body)
    print(f"{MONITORING.relative_to(ROOT)}: PrometheusRule groups copied from {RULES.relative_to(ROOT)}")


PARTS = {
    "schemas": [every_object_has_a_schema, builtin_kinds_pass_kubernetes_schemas, custom_resources_pass_crd_schemas,
                names_labels_and_ports_are_valid],
    "objects": [service_selects_the_daemonset_pods, servicemonitor_selects_the_service,
                servicemonitor_job_is_the_rules_job, servicemonitor_puts_the_node_name_in_node_and_hostname],
    "rules": [prometheusrule_groups_are_the_rules_files, prometheusrule_groups_pass_promtool],
}


def require(parts):
    """Skips (before any check runs, so that a skip never hides a failure) when a part needs what is missing."""
    if "schemas" in parts:
        need_module("jsonschema", "jsonschema")
        need_module("kubernetes_validate", "kubernetes-validate")
    if "rules" in parts and not shutil.which("promtool"):
        skip("promtool is not installed (Debian package prometheus; scripts/setup.sh installs it)")


def main(argv):
    if argv == ["--sync-rules"]:
        sync_rules()
        return 0
    parts = argv or list(PARTS)
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        sys.exit(f"unknown part {unknown}; parts: {', '.join(PARTS)}; or --sync-rules")
    require(parts)
    return run_checks("kubernetes " + "+".join(parts), [c for p in parts for c in PARTS[p]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
