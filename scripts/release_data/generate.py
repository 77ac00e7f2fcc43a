"""Deriving the data file's generated sections from the tags, and the --write merge."""
import json

import yaml

from .common import COMPAT_YAML, RELEASE_MANAGED_KEYS, canon, vt
from .tags import parent, top_level


# ---------------------------------------------------------------- range helpers
MISSING = object()


def compress(releases, values):
    """[(since, until|None, value)] runs of equal values; MISSING breaks a run."""
    out = []
    start = None
    for i, v in enumerate(values + [MISSING]):
        if start is not None and (v is MISSING or canon(v) != canon(values[start])):
            out.append((releases[start], None if i == len(releases) else releases[i - 1], values[start]))
            start = None
        if v is not MISSING and start is None:
            start = i
    return out


def ranged(item, since, until):
    item["since"] = since
    if until is not None:
        item["until"] = until
    return item


def default_changes(releases, start, end, values):
    """[{since, value}] for values[start..end] (a presence run), one entry per change."""
    out = []
    for i in range(start, end + 1):
        if not out or canon(out[-1]["value"]) != canon(values[i]):
            out.append({"since": releases[i], "value": values[i]})
    return out


# ---------------------------------------------------------------- generators
def gen_core(rels, F):
    return [ranged({"core": c}, s, u) | {"src": ["kpa-gomod"]} for s, u, c in
            compress(rels, [F.release(v)["core"] for v in rels])]


def docs_matrix(F, newest):
    # BaseLoader keeps 1.30 a string (a float would read 1.3)
    text = F.p.show("v" + newest, COMPAT_YAML)
    rows = ((yaml.load(text, Loader=yaml.BaseLoader) if text else None) or {}).get("compatibility") or []
    return [(str(r["appVersion"]), str(r["minK8sVersion"]), str(r["maxK8sVersion"])) for r in rows]


def docs_for(rows, v):
    M, m, p = vt(v)
    best = None
    for app, lo, hi in rows:
        parts = app.split(".")
        if len(parts) != 3 or int(parts[0]) != M or int(parts[1]) != m:
            continue
        rank = -1 if parts[2] == "x" else int(parts[2])
        if rank <= p and (best is None or rank >= best[0]):
            best = (rank, lo, hi)
    return None if best is None else {"min": best[1], "max": best[2]}


def gen_kubernetes(rels, F):
    rows = docs_matrix(F, rels[-1])
    vals = []
    for v in rels:
        r = F.release(v)
        x = {"code": {"min": r["k8s"][0], "max": r["k8s"][1]}}
        d = docs_for(rows, v)
        if d:
            x["docs"] = d
        x["outOfRange"] = r["outOfRange"]
        vals.append(x)
    out = []
    for s, u, x in compress(rels, vals):
        item = ranged({}, s, u)
        item.update(x)
        item["src"] = ["kpa-version", "kpa-compat"] if "docs" in x else ["kpa-version"]
        out.append(item)
    return out


def crd_state(b):
    served = sorted(v["name"] for v in b["versions"] if v["served"])
    storage = [v["name"] for v in b["versions"] if v["storage"]][0]
    st = {"served": served, "storage": storage, "conversion": b["conversion"]}
    if b["service"]:
        st["webhookService"] = b["service"]
    return st


def all_crds(rels, F, field):
    names = set()
    for v in rels:
        names |= set(F.release(v)[field])
    return sorted(names)


def gen_crds(rels, F):
    out = []
    for crd in all_crds(rels, F, "crds"):
        vals = [crd_state(F.release(v)["crds"][crd]) if crd in F.release(v)["crds"] else MISSING for v in rels]
        for s, u, st in compress(rels, vals):
            item = {"crd": crd}
            item.update(st)
            out.append(ranged(item, s, u) | {"src": ["kpa-crds"]})
    out.sort(key=lambda i: (i["crd"], vt(i["since"])))
    return out


def gen_crd_chart(rels, F):
    out = []
    for crd in all_crds(rels, F, "crdChart"):
        vals = [F.release(v)["crdChart"].get(crd, MISSING) for v in rels]
        for s, u, st in compress(rels, vals):
            item = {"crd": crd}
            item.update(st)
            out.append(ranged(item, s, u) | {"src": ["kpa-crd-chart"]})
    out.sort(key=lambda i: (i["crd"], vt(i["since"])))
    return out


def version_pairs(a, b):
    """(old version name, new version name) pairs compared between two releases of a CRD."""
    sa = {v["name"]: v for v in a["versions"] if v["served"]}
    sb = {v["name"]: v for v in b["versions"] if v["served"]}
    pairs = [(n, n) for n in sorted(sa) if n in sb]
    st_a = [v["name"] for v in a["versions"] if v["storage"]][0]
    st_b = [v["name"] for v in b["versions"] if v["storage"]][0]
    if st_a != st_b and st_a in sa and st_b in sb:
        pairs.append((st_a, st_b))
    return [(sa[x]["view"], sb[y]["view"], x, y) for x, y in pairs]


def transitions(rels, F):
    """removedFields, newlyRequired, changedDefaults as computed from the schemas."""
    removed, required, defaults = [], [], []
    for i in range(1, len(rels)):
        a_rel, b_rel = F.release(rels[i - 1]), F.release(rels[i])
        since = rels[i]
        for crd in sorted(set(a_rel["crds"]) & set(b_rel["crds"])):
            for va, vb, na, nb in version_pairs(a_rel["crds"][crd], b_rel["crds"][crd]):
                for path in top_level(va.paths - vb.paths):
                    it = {"crd": crd, "version": na}
                    if nb != na:
                        it["toVersion"] = nb
                    it["path"] = path
                    removed.append(it | {"since": since})
                for path in sorted(va.enums):
                    if path in vb.enums:
                        for val in sorted(va.enums[path] - vb.enums[path]):
                            it = {"crd": crd, "version": na}
                            if nb != na:
                                it["toVersion"] = nb
                            it["path"] = path
                            it["value"] = json.loads(val)
                            removed.append(it | {"since": since})
                for path in sorted(vb.required - va.required):
                    if parent(path) in va.paths or parent(path) == "spec":
                        it = {"crd": crd, "version": nb}
                        if nb != na:
                            it["fromVersion"] = na
                        it["path"] = path
                        required.append(it | {"since": since})
                for path in sorted(set(va.defaults) | set(vb.defaults)):
                    if path not in va.paths or path not in vb.paths:
                        continue
                    old, new = va.defaults.get(path), vb.defaults.get(path)
                    if canon(old) != canon(new):
                        it = {"crd": crd, "version": nb}
                        if nb != na:
                            it["fromVersion"] = na
                        it.update({"path": path, "since": since, "from": old, "to": new})
                        defaults.append(it)
    for lst in (removed, required, defaults):
        for it in lst:
            it["src"] = ["kpa-crds"]
    return removed, required, defaults


def gen_helm(rels, F, field, src):
    keys = set()
    for v in rels:
        keys |= set(F.release(v)[field])
    out = []
    for key in sorted(keys):
        vals = [F.release(v)[field].get(key, MISSING) for v in rels]
        present = [True if x is not MISSING else MISSING for x in vals]
        for s, u, _ in compress(rels, present):
            i0, i1 = rels.index(s), rels.index(u) if u else len(rels) - 1
            item = ranged({"key": key}, s, u)
            if not (field == "values" and key in RELEASE_MANAGED_KEYS):
                item["defaults"] = default_changes(rels, i0, i1, vals)
            item["src"] = [src]
            out.append(item)
    out.sort(key=lambda i: (i["key"], vt(i["since"])))
    return out


def gen_names(rels, get, src_of):
    names = set()
    for v in rels:
        names |= set(get(v))
    out = []
    for n in sorted(names):
        for s, u, _ in compress(rels, [True if n in get(v) else MISSING for v in rels]):
            out.append(ranged({"name": n}, s, u) | {"src": src_of(n)})
    return out


def gen_env(rels, F):
    return gen_names(rels, lambda v: F.release(v)["env"], lambda n: ["kpa-deployment"])


def controller_env(F, v):
    r = F.release(v)
    return {n: "provider" for n in r["providerEnv"]} | {n: "core" for n in r["coreFacts"]["env"]}


def gen_controller_env(rels, F):
    out = []
    names = set()
    for v in rels:
        names |= set(controller_env(F, v))
    for n in sorted(names):
        vals = [controller_env(F, v).get(n, MISSING) for v in rels]
        for s, u, reader in compress(rels, vals):
            out.append(ranged({"name": n, "reader": reader}, s, u) |
                       {"src": ["kpa-options"] if reader == "provider" else ["ksk-options"]})
    return out


def gen_feature_gates(rels, F):
    names = []
    for v in rels:
        for g in F.release(v)["coreFacts"]["gates"]:
            if g not in names:
                names.append(g)
    out = []
    for g in names:
        present = [True if g in F.release(v)["coreFacts"]["gates"] else MISSING for v in rels]
        for s, u, _ in compress(rels, present):
            i0, i1 = rels.index(s), rels.index(u) if u else len(rels) - 1
            dv = [F.release(v)["coreFacts"]["gateDefaults"].get(g) for v in rels]
            item = ranged({"name": g}, s, u)
            item["defaults"] = default_changes(rels, i0, i1, dv)
            chart = []
            cv = [F.release(rels[i])["chartGates"].get(g, MISSING) if i0 <= i <= i1 else MISSING
                  for i in range(len(rels))]
            for cs, cu, key in compress(rels, cv):
                chart.append(ranged({}, cs, cu) | {"valuesKey": key})
            if chart:
                item["chart"] = chart
            item["src"] = ["ksk-options", "kpa-deployment"] if chart else ["ksk-options"]
            out.append(item)
    return out


def gen_gate_parsing(rels, F):
    return [ranged({"omitted": o}, s, u) | {"src": ["ksk-options"]} for s, u, o in
            compress(rels, [F.release(v)["coreFacts"]["omitted"] for v in rels])]


def chart_gate_defects(F, v):
    """Gates the chart renders from a values key that values.yaml does not have (renders `Gate=`)."""
    r = F.release(v)
    return sorted(g for g, key in r["chartGates"].items() if key not in r["values"])


# ---------------------------------------------------------------- --write merging
IDENTITY = {
    "core": ("since",),
    "kubernetes": ("since",),
    "featureGateParsing": ("since",),
    "crds": ("crd", "since"),
    "crdChartConversion": ("crd", "since"),
    "removedFields": ("crd", "version", "toVersion", "path", "value", "since"),
    "newlyRequired": ("crd", "version", "fromVersion", "path", "since"),
    "changedDefaults": ("crd", "version", "fromVersion", "path", "since"),
    "helm": ("key", "since"),
    "crdChartHelm": ("key", "since"),
    "env": ("name", "since"),
    "controllerEnv": ("name", "since"),
    "featureGates": ("name", "since"),
}
HAND_FIELDS = ("replacement", "renamedTo", "note")


def ident(section, item):
    return tuple(canon(item.get(k)) for k in IDENTITY[section])


def merge_hand(section, generated, old):
    by = {ident(section, it): it for it in old or []}
    out = []
    for it in generated:
        prev = by.get(ident(section, it))
        if prev:
            src = it.pop("src")
            for f in HAND_FIELDS:
                if f in prev:
                    it[f] = prev[f]
            it["src"] = src + [s for s in prev.get("src", []) if s not in src]
        out.append(it)
    return out


def generate(rels, F):
    removed, required, defaults = transitions(rels, F)
    return {
        "core": gen_core(rels, F),
        "kubernetes": gen_kubernetes(rels, F),
        "crds": gen_crds(rels, F),
        "crdChartConversion": gen_crd_chart(rels, F),
        "removedFields": removed,
        "newlyRequired": required,
        "changedDefaults": defaults,
        "helm": gen_helm(rels, F, "values", "kpa-values"),
        "crdChartHelm": gen_helm(rels, F, "crdValues", "kpa-crd-chart"),
        "env": gen_env(rels, F),
        "controllerEnv": gen_controller_env(rels, F),
        "featureGates": gen_feature_gates(rels, F),
        "featureGateParsing": gen_gate_parsing(rels, F),
    }


SECTION_ORDER = ["schema", "description", "conventions", "sources", "releases", "core", "kubernetes",
                 "crds", "crdChartConversion", "removedFields", "newlyRequired", "changedDefaults",
                 "annotations", "helm", "crdChartHelm", "env", "controllerEnv", "featureGates",
                 "featureGateParsing", "hops", "avoid"]


def dump(data):
    """The data file's text: known sections in SECTION_ORDER, anything else after them."""
    ordered = {k: data[k] for k in SECTION_ORDER if k in data}
    ordered.update({k: v for k, v in data.items() if k not in ordered})
    return json.dumps(ordered, indent=2, ensure_ascii=False) + "\n"
