"""A container's environment as the kubelet builds it: `envFrom` sources in order, then `env` entries in order
(each value `$(VAR)`-expanded with the variables defined before it), `env` winning over `envFrom`. ConfigMaps and
Secrets are read when the same manifest holds them; what cannot be read (a ConfigMap elsewhere in the cluster, a
`fieldRef` known only at run time) is kept as a name with the reason, so a gate that depends on it can say so.

kubelet: pkg/kubelet/kubelet_pods.go makeEnvironmentVariables (envFrom first, then env; `$(VAR)` expansion of env
values against the variables defined so far).
"""

from __future__ import annotations

import base64
import binascii

from ...vocab.errors import LayoutError
from ...vocab.records import record
from ..serve.argv import k8s_expand


@record
class PodEnv:
    values: dict  # name -> value, the variables kvcalc can read
    unknown: dict  # name -> why its value cannot be read
    unread: list  # envFrom sources whose variables (names and values) cannot be read
    notes: list


def expect(value, kind: type, source: str, key: str, what: str):
    """value when it has the type a Kubernetes field has; else the one-line bad-input error."""
    if value is None:
        return kind()
    if not isinstance(value, kind) or isinstance(value, bool):
        raise LayoutError(source, key, what, value if isinstance(value, (str, int, float, bool)) else
                          type(value).__name__)
    return value


def config_data(doc: dict, source: str, key: str) -> dict[str, str]:
    """A ConfigMap's `data`, or a Secret's `data` (base64) and `stringData`, as strings."""
    out: dict[str, str] = {}
    data = expect(doc.get("data"), dict, source, f"{key}.data", "a mapping of keys to strings")
    for k, v in data.items():
        if not isinstance(v, str):
            raise LayoutError(source, f"{key}.data.{k}", "a string", v if isinstance(v, (int, float, bool)) else
                              type(v).__name__)
        if doc.get("kind") == "Secret":
            try:
                v = base64.b64decode(v, validate=True).decode("utf-8")
            except (binascii.Error, ValueError):
                raise LayoutError(source, f"{key}.data.{k}", "base64 text (a Secret's data)", v) from None
        out[str(k)] = v
    if doc.get("kind") == "Secret":
        string = expect(doc.get("stringData"), dict, source, f"{key}.stringData", "a mapping of keys to strings")
        out.update({str(k): str(v) for k, v in string.items()})
    return out


def container_env(source: str, key: str, container: dict, objects: dict, injected: dict | None = None,
                  injected_unknown: dict | None = None) -> PodEnv:
    """The container's variables. `objects`: (kind, name) -> the ConfigMap / Secret documents of the manifest;
    `injected` / `injected_unknown`: what a controller's webhook adds first (k8s_pods.PodTemplate)."""
    values: dict[str, str] = dict(injected or {})
    unknown: dict[str, str] = dict(injected_unknown or {})
    unread: list[str] = []
    notes: list[str] = []
    env_from = expect(container.get("envFrom"), list, source, f"{key}.envFrom", "a list of sources")
    for j, item in enumerate(env_from):
        item = expect(item, dict, source, f"{key}.envFrom[{j}]", "a configMapRef or secretRef")
        prefix = str(item.get("prefix") or "")
        for kind, field in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            if field not in item:
                continue
            ref = expect(item[field], dict, source, f"{key}.envFrom[{j}].{field}", "a mapping with a name")
            name = ref.get("name")
            doc = objects.get((kind, name))
            if doc is None:
                # Optional or not, the cluster may hold it: its variables are unknown either way (optional only
                # lets the pod start without it).
                unread.append(f"{kind} {name!r} (envFrom{', optional' if ref.get('optional') else ''}) is not in "
                              "this manifest")
                continue
            for k, v in config_data(doc, source, f"{kind}/{name}").items():
                values[prefix + k] = v
                unknown.pop(prefix + k, None)
    entries = expect(container.get("env"), list, source, f"{key}.env", "a list of name/value entries")
    seen: set[str] = set()
    total = 0
    for j, entry in enumerate(entries):
        entry = expect(entry, dict, source, f"{key}.env[{j}]", "a name/value entry")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise LayoutError(source, f"{key}.env[{j}].name", "a variable name", name)
        if name in seen:
            notes.append(f"{key}.env: {name} is defined twice; the later entry wins, as the kubelet does")
        seen.add(name)
        if "valueFrom" in entry:
            got = _value_from(source, f"{key}.env[{j}].valueFrom", entry["valueFrom"], objects)
            if isinstance(got, str):
                values[name] = got
                unknown.pop(name, None)
            elif got is not None:
                unknown[name] = got[0]
                values.pop(name, None)
            continue
        value = entry.get("value", "")
        if not isinstance(value, str):
            raise LayoutError(source, f"{key}.env[{j}].value", "a string (quote numbers in YAML)", value
                              if isinstance(value, (int, float, bool)) else type(value).__name__)
        values[name] = _expanded(source, f"{key}.env[{j}].value", value, values)
        total += len(values[name])
        if total > MAX_ENV_BYTES:
            raise LayoutError(source, f"{key}.env", f"variables of at most {MAX_ENV_BYTES:,} bytes in all after $(VAR) "
                                                    "expansion (kvcalc's bound; execve refuses far less)",
                              f"more than {MAX_ENV_BYTES:,}")
        unknown.pop(name, None)
    return PodEnv(values=values, unknown=unknown, unread=unread, notes=notes)


# Linux's MAX_ARG_STRLEN (32 pages): execve refuses a longer argument or environment string with E2BIG, so no
# container gets one; and a bound on a container's variables in all.
MAX_ARG_STRLEN = 131072
MAX_ENV_BYTES = 4 << 20


def _expanded(source: str, key: str, value: str, values: dict) -> str:
    from ..serve.argv import ExpansionTooLong

    try:
        return k8s_expand(value, values, MAX_ARG_STRLEN)
    except ExpansionTooLong:
        raise LayoutError(source, key, f"a value of at most {MAX_ARG_STRLEN:,} bytes after $(VAR) expansion (Linux's "
                                       "MAX_ARG_STRLEN: the container would not start, execve fails with E2BIG)",
                          f"more than {MAX_ARG_STRLEN:,}") from None


def _value_from(source: str, key: str, spec, objects: dict):
    """valueFrom: the value (str), (why it is unknown,), or None for a missing optional key."""
    spec = expect(spec, dict, source, key, "a configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef")
    for kind, field in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
        if field in spec:
            ref = expect(spec[field], dict, source, f"{key}.{field}", "a mapping with name and key")
            name, item = ref.get("name"), ref.get("key")
            doc = objects.get((kind, name))
            if doc is None:
                return (f"from {kind} {name!r} key {item!r}, not in this manifest",)
            data = config_data(doc, source, f"{kind}/{name}")
            if item in data:
                return data[item]
            if ref.get("optional"):
                return None
            return (f"{kind} {name!r} has no key {item!r}",)
    if "fieldRef" in spec:
        ref = expect(spec["fieldRef"], dict, source, f"{key}.fieldRef", "a mapping with fieldPath")
        return (f"fieldRef {ref.get('fieldPath')}, known when the pod runs",)
    if "resourceFieldRef" in spec:
        ref = expect(spec["resourceFieldRef"], dict, source, f"{key}.resourceFieldRef", "a mapping with resource")
        return (f"resourceFieldRef {ref.get('resource')}, known when the pod runs",)
    return ("a valueFrom kvcalc does not read",)
