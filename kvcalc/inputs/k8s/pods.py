"""The pod templates of a manifest: the workload kinds Kubernetes and the common operators define, by where they
keep their pod spec, and for any other kind (a custom resource: llm-d's DisaggregatedSet, AIBrix's StormService,
KServe's ServingRuntime, a RayCluster) every mapping under it that holds a `containers` list. Each template comes
with the variables its controller adds to every container (LeaderWorkerSet's LWS_*). Also: the manifest's files
(`kind: List` flattened, a directory of manifests read in name order) and the files a container mounts from a
ConfigMap or Secret the manifest holds."""

from __future__ import annotations

import os

from ...vocab.errors import LayoutError
from ...vocab.records import record
from .env import config_data, expect

WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job")
MAX_FILES = 64  # a directory of manifests: more files than this is not one deployment
MAX_DEPTH = 12  # how deep a custom resource's pod spec may sit


@record
class PodTemplate:
    label: str  # "Deployment/name", "LeaderWorkerSet/name workerTemplate", "StormService/x spec.template…"
    spec: dict
    env: dict  # variables the controller adds to every container unless the container defines them
    unknown: dict  # variables the controller adds whose value is known only when the pod runs: name -> why
    namespace: str | None = None  # the workload's metadata.namespace (None: where the manifest is applied)


def documents(path: str) -> list[dict]:
    """The manifest's objects: every non-empty YAML document (a `kind: List`'s items in its place); a directory:
    its *.yaml / *.yml / *.json files in name order, as `kubectl apply -f DIR` reads them."""
    from ..files import read_yaml_documents

    if os.path.isdir(path):
        try:
            names = sorted(n for n in os.listdir(path) if n.endswith((".yaml", ".yml", ".json")))
        except OSError as e:
            raise LayoutError(path, "", "a readable directory of manifests", detail=e.strerror or str(e)) from None
        if not names:
            raise LayoutError(path, "", "a directory holding *.yaml, *.yml or *.json manifests")
        if len(names) > MAX_FILES:
            raise LayoutError(path, "", f"at most {MAX_FILES} manifest files", len(names))
        files = [os.path.join(path, n) for n in names]
    else:
        files = [path]
    out: list[dict] = []
    for f in files:
        for i, doc in enumerate(read_yaml_documents(f, "a readable Kubernetes manifest")):
            if doc is None:
                continue
            where = f"document {i + 1}"
            if not isinstance(doc, dict):
                raise LayoutError(f, where, "a Kubernetes object (a mapping)", type(doc).__name__)
            kind = doc.get("kind")
            if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
                items = expect(doc.get("items"), list, f, f"{where}.items", "a list of objects")
                out += [expect(item, dict, f, f"{where}.items[{j}]", "a Kubernetes object")
                        for j, item in enumerate(items)]
            else:
                out.append(doc)
    return out


def objects(path: str, docs: list[dict]) -> dict:
    """(kind, namespace, name) -> the ConfigMaps and Secrets of the manifest (namespace None when it names none)."""
    out: dict = {}
    for doc in docs:
        if doc.get("kind") in ("ConfigMap", "Secret"):
            meta = expect(doc.get("metadata"), dict, path, f"{doc['kind']}.metadata", "a mapping")
            out[(doc["kind"], meta.get("namespace"), meta.get("name"))] = doc
    return out


def in_namespace(objs: dict, namespace: str | None) -> dict:
    """(kind, name) -> the ConfigMaps and Secrets a pod of `namespace` can reference: a pod reads only its own
    namespace's. One that names another namespace is not the pod's; one that names none (or a workload that names
    none) goes where the manifest is applied (`kubectl apply -n X` refuses an object that names another namespace
    than X), taken as the same namespace."""
    out: dict = {}
    for (kind, ns, name), doc in objs.items():
        if ns is None or namespace is None or ns == namespace:
            if (kind, name) in out and ns != namespace:
                continue  # the pod's own namespace's object of that name wins
            out[(kind, name)] = doc
    return out


def templates(source: str, doc: dict) -> list[PodTemplate]:
    """Every pod template a document holds, with the document's namespace."""
    from ...vocab.records import replace

    meta = doc.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return [replace(t, namespace=ns) if ns is not None else t for t in _templates(source, doc)]


def _templates(source: str, doc: dict) -> list[PodTemplate]:
    kind = doc.get("kind")
    if kind in ("ConfigMap", "Secret", "Service", "Namespace", "ServiceAccount", "PersistentVolumeClaim"):
        return []
    meta = expect(doc.get("metadata"), dict, source, f"{kind}.metadata", "a mapping")
    label = f"{kind}/{meta.get('name', '?')}"
    spec = expect(doc.get("spec"), dict, source, f"{label}.spec", "a mapping") if "spec" in doc else {}

    def at(node: dict, *path: str) -> dict:
        for i, part in enumerate(path):
            node = expect(node.get(part), dict, source, f"{label}.spec." + ".".join(path[:i + 1]), "a mapping")
        return node

    def plain(name: str, pod: dict) -> PodTemplate:
        return PodTemplate(label=name, spec=pod, env={}, unknown={})

    if kind == "Pod":
        return [plain(label, spec)]
    if kind in WORKLOADS:
        return [plain(label, at(spec, "template", "spec"))]
    if kind == "CronJob":
        return [plain(label, at(spec, "jobTemplate", "spec", "template", "spec"))]
    if kind == "LeaderWorkerSet":
        return _lws(source, label, spec, at)
    if kind == "InferenceService":
        pred = at(spec, "predictor")
        out = [plain(f"{label} predictor", pred)] if pred.get("containers") else []
        if pred.get("model") is not None:  # predictor.model: one container-like block
            m = dict(at(spec, "predictor", "model"))
            m.setdefault("name", "kserve-container")
            out.append(plain(f"{label} predictor.model", {"containers": [m], "volumes": pred.get("volumes") or []}))
        return out
    # A custom resource (or an OpenShift Template's objects): every pod spec under it.
    body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind", "metadata", "status")}
    return [plain(f"{label} {where[1:]}", pod) for where, pod in _found_pods(body, "", 0)]


def _lws(source: str, label: str, spec: dict, at) -> list[PodTemplate]:
    """LeaderWorkerSet: its webhook adds LWS_LEADER_ADDRESS, LWS_GROUP_SIZE (the template's size) and
    LWS_WORKER_INDEX (0 for the leader) to every container that does not define them (kubernetes-sigs/lws
    api/leaderworkerset/v1 leaderworkerset_types.go: "Environment variable added to all containers in the
    LeaderWorkerSet"; pkg/webhooks/pod_webhook.go addEnvVarsIfNotExists)."""
    lwt = at(spec, "leaderWorkerTemplate")
    size = lwt.get("size", 1)
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise LayoutError(source, f"{label}.spec.leaderWorkerTemplate.size", "a positive group size", size)
    out = []
    for part in ("leaderTemplate", "workerTemplate"):
        if lwt.get(part) is None:
            continue
        unknown = {"LWS_LEADER_ADDRESS": "the leader pod's address, set by LeaderWorkerSet when it runs"}
        env = {"LWS_GROUP_SIZE": str(size)}
        if part == "leaderTemplate":
            env["LWS_WORKER_INDEX"] = "0"
        else:
            unknown["LWS_WORKER_INDEX"] = "the worker's index in its group (1 to size - 1), set when it runs"
        out.append(PodTemplate(label=f"{label} {part}", spec=at(spec, "leaderWorkerTemplate", part, "spec"),
                               env=env, unknown=unknown))
    return out


def _found_pods(node, where: str, depth: int) -> list[tuple[str, dict]]:
    """(path, mapping) of every mapping under a custom resource's spec that holds a `containers` list (not
    looking inside a found pod spec)."""
    if depth > MAX_DEPTH:
        return []
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            return [(where, node)]
        out = []
        for k, v in node.items():
            out += _found_pods(v, f"{where}.{k}", depth + 1)
        return out
    if isinstance(node, list):
        out = []
        for i, v in enumerate(node):
            out += _found_pods(v, f"{where}[{i}]", depth + 1)
        return out
    return []


def mounted_files(source: str, pod: dict, container: dict, objs: dict) -> dict[str, str]:
    """path -> text of the files a container mounts from a ConfigMap or Secret the manifest holds (a volume's
    `items` pick keys and paths; a mount's subPath picks one)."""
    volumes = {v.get("name"): v for v in pod.get("volumes") or [] if isinstance(v, dict)}
    out: dict[str, str] = {}
    for mount in container.get("volumeMounts") or []:
        if not isinstance(mount, dict) or not isinstance(mount.get("mountPath"), str):
            continue
        vol = volumes.get(mount.get("name")) or {}
        for kind, field, name_key in (("ConfigMap", "configMap", "name"), ("Secret", "secret", "secretName")):
            ref = vol.get(field)
            if not isinstance(ref, dict) or (kind, ref.get(name_key)) not in objs:
                continue
            data = config_data(objs[(kind, ref.get(name_key))], source, f"{kind}/{ref.get(name_key)}")
            items = ref.get("items")
            paths = ({str(i.get("key")): str(i.get("path")) for i in items if isinstance(i, dict)}
                     if isinstance(items, list) else {k: k for k in data})
            base = os.path.normpath(mount["mountPath"])
            sub = mount.get("subPath")
            for key, rel in paths.items():
                if key not in data:
                    continue
                if sub:
                    if sub == rel:
                        out[base] = data[key]
                else:
                    out[os.path.join(base, rel)] = data[key]
    return out
