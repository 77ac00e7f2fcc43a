#!/usr/bin/env python3
"""Cross-check data/karpenter-releases.json against the upstream git tags.

This is a maintainer's tool, not part of CI: it reads local git mirrors of
aws/karpenter-provider-aws ("provider") and kubernetes-sigs/karpenter ("core").
It needs PyYAML (the CRDs and values.yaml are YAML); the repository's emulator venv
has it, so run it as (plain python3 works too where PyYAML is installed)

    .venv-emulator/bin/python scripts/check_release_data.py [--data FILE]
        [--provider MIRROR] [--core MIRROR] [--write] [-v]

It reads every tag through one `git cat-file --batch` per mirror and takes a few seconds.

Checks
  0. self-consistency: schema id, sorted release list, every since/until is a listed
     release and since <= until, no overlapping ranges for the same crd/key/name,
     every src id exists in `sources`
  1. for every release (every provider tag vMAJOR.MINOR.PATCH in the data's range):
     the pinned core version (go.mod), the CRDs in pkg/apis/crds (served, storage,
     conversion, hard-coded webhook Service), the karpenter-crd chart's conversion
     template, the flattened keys and defaults of both charts' values.yaml, the env
     names deployment.yaml sets, the env names the controller reads (options.go of the
     provider and of the pinned core), the feature gates (core FEATURE_GATES default,
     how an omitted gate is parsed, the values key the chart renders each gate from),
     Min/MaxK8sVersion and what happens out of range, and the docs compatibility matrix
  2. transitions between consecutive releases: spec fields and enum values removed,
     fields newly required, schema defaults changed (openAPIV3Schema diffs)
  3. hand-written sections, where the tags allow: annotation effects (string present
     or absent in the Go sources around each boundary, the fatal start-up check in
     operator.go), hops (served/storage versions of from/via/to), avoid (releases whose
     chart renders a feature gate from a values key it does not have; quotes from the
     upgrade guide), and every source `quote` / `commit`
Exit status 0 when everything agrees, 1 on any MISMATCH, 2 on a usage problem.

--write regenerates the derivable sections (core, kubernetes, crds, crdChartConversion,
removedFields, newlyRequired, changedDefaults, helm, crdChartHelm, env, controllerEnv,
featureGates, featureGateParsing) and the release list from the tags.  Hand-written
fields on generated items (note, replacement, renamedTo, extra src ids) are kept when
the item's identity and `since` are unchanged; annotations, hops, avoid and sources are
never rewritten.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

try:
    import yaml
except ImportError:  # pragma: no cover - environment dependent
    sys.stderr.write("check_release_data.py needs PyYAML; run it with the repository's venv:\n"
                     "    .venv-emulator/bin/python scripts/check_release_data.py\n")
    sys.exit(2)

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA_DEFAULT = os.path.join(ROOT, "data", "karpenter-releases.json")
PROVIDER_DEFAULT = "/work/.mirror/aws+karpenter-provider-aws/repo"
CORE_DEFAULT = "/work/.mirror/kubernetes-sigs+karpenter/repo"
SCHEMA = "karpdoctor/karpenter-releases/1"
FIRST_RELEASE = "0.37.0"
TAG_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")

# values.yaml keys whose value in a tag is not what the published chart holds: the
# release job rewrites them when it packages the chart (hack/release/common.sh).
RELEASE_MANAGED_KEYS = {"controller.image.tag", "controller.image.digest"}

# Files that make up each derivable fact (used in messages).
VALUES = "charts/karpenter/values.yaml"
CRD_VALUES = "charts/karpenter-crd/values.yaml"
DEPLOYMENT = "charts/karpenter/templates/deployment.yaml"
VERSION_GO = "pkg/providers/version/version.go"
OPERATOR_GO = "pkg/operator/operator.go"
OPTIONS_GO = "pkg/operator/options/options.go"
COMPAT_YAML = "hack/docs/compatibilitymatrix_gen/compatibility.yaml"

problems = []
VERBOSE = False


def fail(msg):
    problems.append(msg)
    print("  MISMATCH: " + msg)


def info(msg):
    if VERBOSE:
        print("  " + msg)


# ---------------------------------------------------------------- versions
def vt(s):
    if not isinstance(s, str) or not VERSION_RE.match(s):
        raise ValueError("bad version %r" % (s,))
    return tuple(int(p) for p in s.split("."))


def canon(x):
    return json.dumps(x, sort_keys=True)


# ---------------------------------------------------------------- git access
class Repo:
    """A bare mirror read through one long-lived `git cat-file --batch`."""

    def __init__(self, path, label):
        self.path = path
        self.label = label
        if not os.path.isdir(path):
            sys.stderr.write("%s mirror not found: %s\n" % (label, path))
            sys.exit(2)
        self.proc = subprocess.Popen(["git", "-C", path, "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.cache = {}

    def run(self, *args, ok=(0,)):
        p = subprocess.run(["git", "-C", self.path] + list(args), capture_output=True, text=True)
        if p.returncode not in ok:
            raise RuntimeError("git %s: %s" % (" ".join(args), p.stderr.strip()))
        return p.stdout

    def object(self, spec):
        """Bytes of `rev:path` (or an object id), None when missing."""
        if spec in self.cache:
            return self.cache[spec]
        self.proc.stdin.write((spec + "\n").encode())
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().decode().rstrip("\n")
        if header.endswith(" missing") or header.endswith(" ambiguous"):
            self.cache[spec] = None
            return None
        sha, kind, size = header.split(" ")
        data = self.proc.stdout.read(int(size))
        self.proc.stdout.read(1)
        if kind != "blob":
            data = None
        self.cache[spec] = data
        return data

    def show(self, rev, path):
        b = self.object("%s:%s" % (rev, path))
        return None if b is None else b.decode("utf-8", "replace")

    def ls(self, rev, folder):
        """[(sha, name)] of the blobs directly inside folder."""
        out = []
        for line in self.run("ls-tree", rev, folder.rstrip("/") + "/").splitlines():
            meta, name = line.split("\t", 1)
            mode, kind, sha = meta.split()
            if kind == "blob":
                out.append((sha, name.rsplit("/", 1)[-1]))
        return out

    def tags(self):
        return self.run("tag").split()

    def grep(self, rev, needle):
        """Non-test .go files of rev that contain needle (fixed string)."""
        out = self.run("grep", "-l", "-F", "-e", needle, rev, "--", "*.go", ok=(0, 1))
        files = []
        for line in out.splitlines():
            path = line.split(":", 1)[1]
            if not path.endswith("_test.go") and "/test/" not in path and not path.startswith("test/"):
                files.append(path)
        return files

    def has_commit(self, rev):
        return subprocess.run(["git", "-C", self.path, "cat-file", "-e", rev + "^{commit}"],
                              capture_output=True).returncode == 0

    def is_ancestor(self, a, b):
        return subprocess.run(["git", "-C", self.path, "merge-base", "--is-ancestor", a, b],
                              capture_output=True).returncode == 0


def core_rev(core_version):
    """A go.mod version of sigs.k8s.io/karpenter -> a revision of the core mirror."""
    m = re.search(r"-(?:[0-9A-Za-z]+\.)?\d{14}-([0-9a-f]{12})$", core_version)
    return m.group(1) if m else "v" + core_version


# ---------------------------------------------------------------- YAML helpers
def load_yaml(text):
    return yaml.load(text, Loader=LOADER) if text is not None else None


def flatten(d, prefix=""):
    """values.yaml -> {dotted key: value}; a key ends at a scalar, a list or an empty map.

    A dot inside a map key is escaped as in `helm --set` (nodeSelector.kubernetes\\.io/os)."""
    out = {}
    if isinstance(d, dict) and d:
        for k, v in d.items():
            seg = str(k).replace(".", "\\.")
            out.update(flatten(v, "%s.%s" % (prefix, seg) if prefix else seg))
    elif prefix:
        out[prefix] = d
    return out


class SchemaView:
    """The spec part of one CRD version's openAPIV3Schema."""

    def __init__(self, schema):
        self.paths = set()
        self.enums = {}      # path -> set of canonical values
        self.required = set()
        self.defaults = {}   # path -> value
        self._walk(schema, "")

    def _walk(self, s, p):
        if not isinstance(s, dict):
            return
        spec = p == "spec" or p.startswith("spec.") or p.startswith("spec[")
        if spec:
            self.paths.add(p)
            if "enum" in s:
                self.enums[p] = {canon(e) for e in s["enum"]}
            if "default" in s:
                self.defaults[p] = s["default"]
        for r in s.get("required") or []:
            q = "%s.%s" % (p, r) if p else r
            if q.startswith("spec."):
                self.required.add(q)
        for k, v in (s.get("properties") or {}).items():
            self._walk(v, "%s.%s" % (p, k) if p else k)
        if isinstance(s.get("items"), dict):
            self._walk(s["items"], p + "[]")
        if isinstance(s.get("additionalProperties"), dict):
            self._walk(s["additionalProperties"], p + "{}")


def parent(path):
    m = re.match(r"^(.*?)(\.[^.\[\]{}]+|\[\]|\{\})$", path)
    return m.group(1) if m else ""


def top_level(paths):
    """Drop paths whose ancestor is in the set."""
    out = []
    for p in sorted(paths):
        if any(p.startswith(o + ".") or p.startswith(o + "[]") or p.startswith(o + "{}") for o in out):
            continue
        out.append(p)
    return out


# ---------------------------------------------------------------- facts per release
class Facts:
    def __init__(self, provider, core):
        self.p = provider
        self.c = core
        self.crd_cache = {}
        self.core_cache = {}
        self.rel = {}

    # ---- CRDs
    def crd_blob(self, sha):
        if sha not in self.crd_cache:
            d = load_yaml(self.p.object(sha).decode())
            versions = []
            for v in d["spec"]["versions"]:
                schema = (v.get("schema") or {}).get("openAPIV3Schema") or {}
                versions.append({"name": v["name"], "served": bool(v.get("served")),
                                 "storage": bool(v.get("storage")), "view": SchemaView(schema)})
            conv = d["spec"].get("conversion") or {}
            svc = ((conv.get("webhook") or {}).get("clientConfig") or {}).get("service")
            self.crd_cache[sha] = {
                "name": d["metadata"]["name"],
                "versions": versions,
                "conversion": conv.get("strategy", "None"),
                "service": {k: svc[k] for k in ("namespace", "name", "port") if k in svc} if svc else None,
            }
        return self.crd_cache[sha]

    # ---- core (per pinned version)
    def core_facts(self, core_version):
        if core_version in self.core_cache:
            return self.core_cache[core_version]
        rev = core_rev(core_version)
        opts = self.c.show(rev, OPTIONS_GO)
        if opts is None:
            raise RuntimeError("core %s (%s) has no %s" % (core_version, rev, OPTIONS_GO))
        m = re.search(r'"FEATURE_GATES",\s*"([^"]*)"', opts)
        defaults = {}
        for part in (m.group(1).split(",") if m and m.group(1) else []):
            k, _, v = part.partition("=")
            defaults[k.strip()] = v.strip().lower() == "true"
        body = func_body(opts, "func ParseFeatureGates(")
        parsed = re.findall(r'gateMap\["(\w+)"\]', body)
        omitted = "default" if "DefaultFeatureGates()" in body else "false"
        f = {"rev": rev, "gateDefaults": defaults, "gates": parsed, "omitted": omitted,
             "env": env_names_in_options(opts)}
        self.core_cache[core_version] = f
        return f

    # ---- provider release
    def release(self, v):
        if v in self.rel:
            return self.rel[v]
        p = self.p
        tag = "v" + v
        gomod = p.show(tag, "go.mod")
        m = re.search(r"^\s*(?:require\s+)?sigs\.k8s\.io/karpenter\s+v(\S+)", gomod, re.M)
        core = m.group(1)
        rep = re.search(r"^\s*replace\s+sigs\.k8s\.io/karpenter\b.*$", gomod, re.M)
        if rep:
            raise RuntimeError("%s: go.mod replaces sigs.k8s.io/karpenter (%s); not handled" % (tag, rep.group(0)))
        crds = {}
        for sha, name in p.ls(tag, "pkg/apis/crds"):
            if name.endswith(".yaml"):
                b = self.crd_blob(sha)
                crds[b["name"]] = b
        crd_chart = {}
        for sha, name in p.ls(tag, "charts/karpenter-crd/templates"):
            m2 = re.match(r"^([^_]+)_([^.]+)\.yaml$", name)
            if m2:
                crd_chart["%s.%s" % (m2.group(2), m2.group(1))] = crd_chart_conversion(p.object(sha).decode())
        values = flatten(load_yaml(p.show(tag, VALUES)) or {})
        crd_values = flatten(load_yaml(p.show(tag, CRD_VALUES)) or {})
        dep = p.show(tag, DEPLOYMENT)
        env = sorted(set(re.findall(r"^\s*- name: ([A-Z][A-Z0-9_]+)\s*$", dep, re.M)))
        gates_line = re.search(r"name: FEATURE_GATES\s*\n\s*value: (.*)", dep)
        chart_gates = {}
        if gates_line:
            for gate, key in re.findall(r"(\w+)=\{\{-?\s*\.Values\.([\w.]+)\s*-?\}\}", gates_line.group(1)):
                chart_gates[gate] = key
        version_go = p.show(tag, VERSION_GO)
        kmin = re.search(r'MinK8sVersion\s*=\s*"([^"]+)"', version_go).group(1)
        kmax = re.search(r'MaxK8sVersion\s*=\s*"([^"]+)"', version_go).group(1)
        operator = p.show(tag, OPERATOR_GO)
        upd = func_body(version_go, "func (p *DefaultProvider) UpdateVersion(")
        if upd and "validateK8sVersion" in upd and re.search(r"lo\.Must0\(\w+\.UpdateVersion\(ctx\)\)", operator):
            out_of_range = "panic-at-start"
        elif "UpdateVersionWithValidation" in version_go:
            out_of_range = "reconcile-error"
        elif "validateK8sVersion" in func_body(version_go, "func (p *DefaultProvider) Get("):
            out_of_range = "error-log"
        else:
            raise RuntimeError("%s: cannot tell how %s enforces the version range" % (tag, VERSION_GO))
        penv = env_names_in_options(p.show(tag, OPTIONS_GO) or "")
        r = {"core": core, "crds": crds, "crdChart": crd_chart, "values": values, "crdValues": crd_values,
             "env": env, "chartGates": chart_gates, "k8s": (kmin, kmax), "outOfRange": out_of_range,
             "providerEnv": penv, "operator": operator}
        r["coreFacts"] = self.core_facts(core)
        self.rel[v] = r
        return r


def func_body(src, header):
    i = src.find(header)
    if i < 0:
        return ""
    j = src.find("\n}\n", i)
    return src[i:j + 2] if j > 0 else src[i:]


def env_names_in_options(src):
    names = set(re.findall(r'WithDefault\w*\(\s*"([A-Z][A-Z0-9_]+)"', src))
    names |= set(re.findall(r'VarWithEnv\([^,]+,\s*"[^"]*",\s*"([A-Z][A-Z0-9_]+)"', src))
    return sorted(names)


def crd_chart_conversion(text):
    """The karpenter-crd chart's conversion block, as values keys."""
    i = text.find("\n  conversion:")
    if i < 0:
        return {"conversion": "None"}
    before = text[:i].rstrip().rsplit("\n", 1)[-1]
    block = text[i:i + 800]
    out = {"conversion": re.search(r"strategy:\s*(\w+)", block).group(1)}
    g = re.match(r"\s*\{\{-?\s*if\s+\.Values\.([\w.]+)\s*-?\}\}", before)
    if g:
        out["when"] = g.group(1)
    svc = {}
    for field in ("name", "namespace", "port"):
        m = re.search(r"\n\s+%s:\s*(.+)" % field, block[block.find("service:"):])
        if not m:
            continue
        expr = m.group(1).strip()
        t = re.match(r"\{\{-?\s*\.Values\.([\w.]+)\s*(\|\s*default\s+\.Release\.Namespace\s*)?-?\}\}$", expr)
        if t:
            svc[field] = t.group(1)
            if t.group(2):
                svc["namespaceFallback"] = "release-namespace"
        else:
            svc[field] = "literal:" + expr
    if svc:
        out["service"] = {k: svc[k] for k in ("name", "namespace", "namespaceFallback", "port") if k in svc}
    return out


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


# ---------------------------------------------------------------- check 0: self-consistency
RANGED = ["core", "kubernetes", "crds", "crdChartConversion", "helm", "crdChartHelm", "env",
          "controllerEnv", "featureGates", "featureGateParsing", "annotations"]
OVERLAP_KEY = {"core": (), "kubernetes": (), "featureGateParsing": (), "crds": ("crd",),
               "crdChartConversion": ("crd",), "helm": ("key",), "crdChartHelm": ("key",),
               "env": ("name",), "controllerEnv": ("name",), "featureGates": ("name",),
               "annotations": ("key", "kind")}
POINT = ["removedFields", "newlyRequired", "changedDefaults"]


def check_consistency(data):
    print("0. self-consistency")
    if data.get("schema") != SCHEMA:
        fail("schema is %r, expected %r" % (data.get("schema"), SCHEMA))
    rels = data.get("releases") or []
    try:
        keys = [vt(r) for r in rels]
    except ValueError as e:
        fail("releases: %s" % e)
        return
    if keys != sorted(set(keys)):
        fail("releases are not strictly ascending")
    relset = set(rels)
    sources = data.get("sources") or {}

    def check_src(where, item):
        src = item.get("src")
        if not src:
            fail("%s: no src" % where)
            return
        for s in src:
            if s not in sources:
                fail("%s: unknown source id %r" % (where, s))

    def check_version(where, field, val):
        if val not in relset:
            fail("%s: %s %r is not a listed release" % (where, field, val))
            return False
        return True

    for sec in RANGED + POINT:
        items = data.get(sec)
        if not isinstance(items, list):
            fail("section %s missing or not a list" % sec)
            continue
        for n, it in enumerate(items):
            where = "%s[%d]" % (sec, n)
            check_src(where, it)
            ok = "since" in it and check_version(where, "since", it["since"])
            if "until" in it:
                if check_version(where, "until", it["until"]) and ok and vt(it["until"]) < vt(it["since"]):
                    fail("%s: until %s < since %s" % (where, it["until"], it["since"]))
            if sec in POINT and ok and it["since"] == rels[0]:
                fail("%s: since is the first release, nothing to compare with" % where)
            for sub in ("defaults", "chart"):
                for d in it.get(sub) or []:
                    check_version(where + "." + sub, "since", d["since"])
                    if "until" in d:
                        check_version(where + "." + sub, "until", d["until"])
        if sec in OVERLAP_KEY:
            groups = {}
            for n, it in enumerate(items):
                groups.setdefault(tuple(canon(it.get(k)) for k in OVERLAP_KEY[sec]), []).append(it)
            for k, group in groups.items():
                spans = sorted((vt(i["since"]), vt(i.get("until", rels[-1]))) for i in group
                               if i.get("since") in relset)
                for (s1, u1), (s2, u2) in zip(spans, spans[1:]):
                    if s2 <= u1:
                        fail("%s: overlapping ranges for %s" % (sec, "/".join(json.loads(x) or "" for x in k)
                                                                  or "(global)"))
    for sec in ("hops", "avoid"):
        for n, it in enumerate(data.get(sec) or []):
            check_src("%s[%d]" % (sec, n), it)
    for n, it in enumerate(data.get("avoid") or []):
        check_version("avoid[%d]" % n, "version", it.get("version"))
    for n, it in enumerate(data.get("hops") or []):
        for part in ("from", "via", "to"):
            for f in ("since", "until"):
                if f in it.get(part, {}):
                    check_version("hops[%d].%s" % (n, part), f, it[part][f])
    info("%d releases, %d sources" % (len(rels), len(sources)))


# ---------------------------------------------------------------- check 1: per release
def in_range(item, v):
    return vt(item["since"]) <= vt(v) and ("until" not in item or vt(v) <= vt(item["until"]))


def at(items, v):
    return [i for i in items if in_range(i, v)]


def value_at(changes, v):
    cur = MISSING
    for c in changes:
        if vt(c["since"]) <= vt(v):
            cur = c["value"]
    return cur


def check_release(data, F, v):
    r = F.release(v)
    where = "release %s" % v
    # core
    cores = at(data["core"], v)
    if [c["core"] for c in cores] != [r["core"]]:
        fail("%s: core %s in data, go.mod pins %s" % (where, [c["core"] for c in cores], r["core"]))
    # kubernetes
    ks = at(data["kubernetes"], v)
    want = {"min": r["k8s"][0], "max": r["k8s"][1]}
    if len(ks) != 1 or ks[0]["code"] != want or ks[0].get("outOfRange") != r["outOfRange"]:
        fail("%s: kubernetes code %s / %s in data, %s says %s / %s" % (
            where, [k.get("code") for k in ks], [k.get("outOfRange") for k in ks], VERSION_GO, want,
            r["outOfRange"]))
    else:
        d = docs_for(F.docs_rows, v)
        if ks[0].get("docs") != d:
            fail("%s: kubernetes docs %s in data, %s says %s" % (where, ks[0].get("docs"), COMPAT_YAML, d))
    # crds
    have = {i["crd"]: {k: i[k] for k in ("served", "storage", "conversion", "webhookService") if k in i}
            for i in at(data["crds"], v)}
    want = {n: crd_state(b) for n, b in r["crds"].items()}
    for n in sorted(set(have) | set(want)):
        if canon(have.get(n)) != canon(want.get(n)):
            fail("%s: CRD %s is %s in data, pkg/apis/crds has %s" % (where, n, have.get(n), want.get(n)))
    have = {i["crd"]: {k: i[k] for k in ("conversion", "when", "service") if k in i}
            for i in at(data["crdChartConversion"], v)}
    for n in sorted(set(have) | set(r["crdChart"])):
        if canon(have.get(n)) != canon(r["crdChart"].get(n)):
            fail("%s: karpenter-crd chart %s conversion is %s in data, template has %s" % (
                where, n, have.get(n), r["crdChart"].get(n)))
    # helm values
    for sec, field, fname in (("helm", "values", VALUES), ("crdChartHelm", "crdValues", CRD_VALUES)):
        items = at(data[sec], v)
        keys = {i["key"]: i for i in items}
        actual = r[field]
        for k in sorted(set(keys) - set(actual)):
            fail("%s: %s key %s is in the data but not in %s" % (where, sec, k, fname))
        for k in sorted(set(actual) - set(keys)):
            fail("%s: %s lacks key %s (in %s, default %s)" % (where, sec, k, fname, canon(actual[k])))
        for k in sorted(set(keys) & set(actual)):
            it = keys[k]
            if sec == "helm" and k in RELEASE_MANAGED_KEYS:
                if "defaults" in it:
                    fail("%s: %s is rewritten at release time; it must not carry defaults" % (sec, k))
                continue
            dv = value_at(it.get("defaults") or [], v)
            if dv is MISSING or canon(dv) != canon(actual[k]):
                fail("%s: %s default of %s is %s in data, %s has %s" % (
                    where, sec, k, "none" if dv is MISSING else canon(dv), fname, canon(actual[k])))
    # env
    names = sorted(i["name"] for i in at(data["env"], v))
    if names != r["env"]:
        fail("%s: env names differ from %s: data-only %s, chart-only %s" % (
            where, DEPLOYMENT, sorted(set(names) - set(r["env"])), sorted(set(r["env"]) - set(names))))
    have = {i["name"]: i.get("reader") for i in at(data["controllerEnv"], v)}
    want = controller_env(F, v)
    if have != want:
        fail("%s: controller env differs from options.go: data-only %s, code-only %s" % (
            where, sorted(set(have.items()) - set(want.items())), sorted(set(want.items()) - set(have.items()))))
    # feature gates
    cf = r["coreFacts"]
    gates = {i["name"]: i for i in at(data["featureGates"], v)}
    if sorted(gates) != sorted(cf["gates"]):
        fail("%s: feature gates %s in data, core %s parses %s" % (where, sorted(gates), cf["rev"], sorted(cf["gates"])))
    for g, it in gates.items():
        dv = value_at(it.get("defaults") or [], v)
        if dv is MISSING or dv != cf["gateDefaults"].get(g):
            fail("%s: gate %s default %s in data, core FEATURE_GATES default says %s" % (
                where, g, None if dv is MISSING else dv, cf["gateDefaults"].get(g)))
    have = {g: c["valuesKey"] for g, it in gates.items() for c in it.get("chart") or [] if in_range(c, v)}
    if have != r["chartGates"]:
        fail("%s: chart-rendered gates %s in data, %s renders %s" % (where, have, DEPLOYMENT, r["chartGates"]))
    om = [i["omitted"] for i in at(data["featureGateParsing"], v)]
    if om != [cf["omitted"]]:
        fail("%s: omitted-gate parsing %s in data, core ParseFeatureGates gives %s" % (where, om, cf["omitted"]))


def check_transitions(data, F, rels):
    removed, required, defaults = transitions(rels, F)
    for sec, derived in (("removedFields", removed), ("newlyRequired", required), ("changedDefaults", defaults)):
        strip = lambda i: canon({k: i[k] for k in i if k not in ("src",) + HAND_FIELDS})
        have = {strip(i) for i in data[sec]}
        want = {strip(i) for i in derived}
        for x in sorted(have - want):
            fail("%s: %s is not what the schemas show at its release" % (sec, x))
        for x in sorted(want - have):
            fail("%s: missing %s" % (sec, x))


# ---------------------------------------------------------------- check 3: hand-written sections
def prev_release(rels, v):
    i = rels.index(v)
    return rels[i - 1] if i > 0 else None


def next_release(rels, v):
    i = rels.index(v)
    return rels[i + 1] if i + 1 < len(rels) else None


def code_mentions(F, v, needle, skip_api_versions=False):
    """Non-test Go files of provider tag v and its pinned core that contain needle.

    skip_api_versions drops the API packages of the karpenter.sh versions that are not
    the storage version at v (1.0.x keeps v1beta1 only to convert old objects; 0.37.x
    serves v1 only as a conversion target)."""
    r = F.release(v)
    hits = ["provider:" + f for f in F.p.grep("v" + v, needle)]
    hits += ["core:" + f for f in F.c.grep(r["coreFacts"]["rev"], needle)]
    if skip_api_versions:
        storage = crd_state(r["crds"]["nodepools.karpenter.sh"])["storage"]
        skip = [ver for ver in ("v1alpha5", "v1beta1", "v1") if ver != storage]
        hits = [h for h in hits if not any("/apis/%s/" % ver in h for ver in skip)]
    return hits


def conversion_refs(F, v, needle):
    """*_conversion.go files that use the string, directly or through a constant defined with it."""
    r = F.release(v)
    out = []
    for repo, rev, label in ((F.p, "v" + v, "provider"), (F.c, r["coreFacts"]["rev"], "core")):
        lines = repo.run("grep", "-h", "-F", "-e", needle, rev, "--", "*.go", ok=(0, 1))
        names = [needle] + re.findall(r"(\w+)\s*:?=[^=\n]*" + re.escape(needle), lines)
        for n in names:
            out += ["%s:%s" % (label, f) for f in repo.grep(rev, n) if f.endswith("_conversion.go")]
    return sorted(set(out))


def needle_of(item):
    """The string searched for in the Go sources: codeString, or the key's name part."""
    if "codeString" in item:
        return item["codeString"]
    key = item["key"]
    return key.split("/", 1)[1] if "/" in key else key


def check_annotations(data, F, rels):
    print("3a. annotations (code around each boundary)")
    for n, it in enumerate(data.get("annotations") or []):
        where = "annotations[%d] %s (%s, %s)" % (n, it["key"], it.get("kind"), it.get("effect"))
        needle = needle_of(it)
        eff = it.get("effect")
        since, until = it["since"], it.get("until")
        if eff == "fatal":
            edges = {prev_release(rels, since), until and next_release(rels, until)}
            for v in rels:
                if not in_range(it, v) and v not in edges:
                    continue
                op = F.release(v)["operator"]
                fatal = needle in op and "Fatalf" in op
                if fatal != in_range(it, v):
                    fail("%s: at %s operator.go %s a fatal check for it" % (where, v, "has" if fatal else "lacks"))
        elif eff == "written-by-conversion":
            for v in (since, until or rels[-1]):
                if not conversion_refs(F, v, needle):
                    fail("%s: no conversion code uses it at %s" % (where, v))
            nxt = until and next_release(rels, until)
            if nxt and conversion_refs(F, nxt, needle):
                fail("%s: conversion code still uses it at %s" % (where, nxt))
        elif eff == "ignored":
            before = prev_release(rels, since)
            if before and not code_mentions(F, before, needle):
                fail("%s: nothing mentions it at %s, so it did not stop working at %s" % (where, before, since))
            for v in (since, until or rels[-1]):
                hits = code_mentions(F, v, needle, skip_api_versions=True)
                if hits:
                    fail("%s: still referenced at %s: %s" % (where, v, ", ".join(hits[:4])))
        else:
            fail("%s: unknown effect %r" % (where, eff))
        info("%s: checked with %r" % (where, needle))


def crd_at(F, v, name):
    b = F.release(v)["crds"].get(name)
    return crd_state(b) if b else None


def check_hops(data, F, rels):
    print("3b. hops")
    karpenter = ["nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"]
    for n, h in enumerate(data.get("hops") or []):
        where = "hops[%d]" % n

        def span(part):
            p = h[part]
            return [v for v in rels if vt(p["since"]) <= vt(v) and ("until" not in p or vt(v) <= vt(p["until"]))]
        if h.get("reason") == "stored-versions":
            for v in span("to"):
                for c in karpenter:
                    st = crd_at(F, v, c)
                    if st and "v1beta1" in st["served"]:
                        fail("%s: target %s still serves v1beta1 for %s" % (where, v, c))
            for v in span("via"):
                for c in karpenter:
                    st = crd_at(F, v, c)
                    if not st or st["storage"] != "v1" or "v1beta1" not in st["served"]:
                        fail("%s: via %s does not serve v1beta1 with storage v1 for %s" % (where, v, c))
                if not F.c.show(F.release(v)["coreFacts"]["rev"], "pkg/controllers/migration/crd/controller.go"):
                    fail("%s: via %s has no storedVersions migration controller in its core" % (where, v))
            for v in span("from"):
                if v in span("via"):
                    fail("%s: %s is both a source and a via release" % (where, v))
        elif h.get("reason") == "rollback-support":
            for v in span("via"):
                for c in karpenter:
                    st = crd_at(F, v, c)
                    if not st or st["conversion"] != "Webhook":
                        fail("%s: rollback target %s has no conversion webhook for %s" % (where, v, c))
        else:
            fail("%s: unknown reason %r" % (where, h.get("reason")))


def check_avoid(data, F, rels):
    print("3c. avoid")
    derived = {v: chart_gate_defects(F, v) for v in rels}
    derived = {v: g for v, g in derived.items() if g}
    listed = {a["version"]: a for a in data.get("avoid") or [] if a.get("reason") == "chart-feature-gate-key-mismatch"}
    for v in sorted(set(derived) | set(listed), key=vt):
        if v not in listed:
            fail("avoid: %s renders feature gate(s) %s from a values key it lacks; not listed" % (v, derived[v]))
        elif v not in derived:
            fail("avoid: %s is listed for a gate key mismatch the chart does not have" % v)
        else:
            info("avoid %s: chart renders %s= (empty)" % (v, ",".join(derived[v])))
    for a in data.get("avoid") or []:
        if a.get("reason") not in ("chart-feature-gate-key-mismatch", "upgrade-guide"):
            fail("avoid %s: unknown reason %r" % (a.get("version"), a.get("reason")))
        if a.get("reason") == "upgrade-guide" and not any(
                "quote" in data["sources"].get(s, {}) for s in a.get("src", [])):
            fail("avoid %s: an upgrade-guide item needs a source with a quote" % a.get("version"))


def norm_ws(s):
    return " ".join(s.split())


def check_sources(data, F):
    print("3d. sources (quotes and commits)")
    for sid, s in sorted((data.get("sources") or {}).items()):
        repo = {"provider": F.p, "core": F.c}.get(s.get("repo"))
        if ("quote" in s or "commit" in s) and repo is None:
            fail("source %s: quote/commit needs repo provider|core" % sid)
            continue
        if "quote" in s:
            text = repo.show(s["tag"], s["path"])
            if text is None:
                fail("source %s: %s:%s not found" % (sid, s["tag"], s["path"]))
            elif norm_ws(s["quote"]) not in norm_ws(text):
                fail("source %s: quote not found in %s:%s" % (sid, s["tag"], s["path"]))
        if "commit" in s:
            if not repo.has_commit(s["commit"]):
                fail("source %s: commit %s not in the %s mirror" % (sid, s["commit"], s["repo"]))
                continue
            if "firstTag" in s and not repo.is_ancestor(s["commit"], s["firstTag"]):
                fail("source %s: commit %s is not in %s" % (sid, s["commit"], s["firstTag"]))
            if "notInTag" in s and repo.is_ancestor(s["commit"], s["notInTag"]):
                fail("source %s: commit %s is already in %s" % (sid, s["commit"], s["notInTag"]))


# ---------------------------------------------------------------- main
def mirror_releases(F, first, last=None):
    out = []
    for t in F.p.tags():
        m = TAG_RE.match(t)
        if m:
            v = "%s.%s.%s" % m.groups()
            if vt(v) >= vt(first) and (last is None or vt(v) <= vt(last)):
                out.append(v)
    return sorted(out, key=vt)


def dump(data):
    ordered = {k: data[k] for k in SECTION_ORDER if k in data}
    ordered.update({k: v for k, v in data.items() if k not in ordered})
    return json.dumps(ordered, indent=2, ensure_ascii=False) + "\n"


def main():
    global VERBOSE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA_DEFAULT)
    ap.add_argument("--provider", default=PROVIDER_DEFAULT, help="git mirror of aws/karpenter-provider-aws")
    ap.add_argument("--core", default=CORE_DEFAULT, help="git mirror of kubernetes-sigs/karpenter")
    ap.add_argument("--write", action="store_true", help="regenerate the derivable sections in place")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    VERBOSE = args.verbose
    t0 = time.time()
    with open(args.data) as fh:
        data = json.load(fh)
    F = Facts(Repo(args.provider, "provider"), Repo(args.core, "core"))

    if args.write:
        rels = mirror_releases(F, FIRST_RELEASE)
        data["releases"] = rels
        gen = generate(rels, F)
        for sec, items in gen.items():
            data[sec] = merge_hand(sec, items, data.get(sec))
        with open(args.data, "w") as fh:
            fh.write(dump(data))
        print("wrote %s: %d releases %s … %s" % (args.data, len(rels), rels[0], rels[-1]))
        for sec in gen:
            print("  %-20s %d" % (sec, len(data[sec])))

    check_consistency(data)
    rels = data.get("releases") or []
    if not rels:
        fail("no releases")
        return finish(t0)
    mirror = mirror_releases(F, rels[0])
    within = [v for v in mirror if vt(v) <= vt(rels[-1])]
    for v in sorted(set(within) - set(rels), key=vt):
        fail("mirror tag v%s is missing from releases" % v)
    for v in sorted(set(rels) - set(mirror), key=vt):
        fail("release %s has no tag in the provider mirror" % v)
    newer = [v for v in mirror if vt(v) > vt(rels[-1])]
    if newer:
        print("  note: the mirror has tags newer than the data (%s): run --write to extend it" % ", ".join(newer))
    rels = [v for v in rels if v in mirror]
    F.docs_rows = docs_matrix(F, rels[-1])

    print("1. per-release facts (%d releases, %s … %s)" % (len(rels), rels[0], rels[-1]))
    for v in rels:
        check_release(data, F, v)
    print("2. schema transitions between consecutive releases")
    check_transitions(data, F, rels)
    gen = generate(rels, F)
    for sec, items in gen.items():
        strip = lambda lst: [{k: i[k] for k in i if k not in ("src",) + HAND_FIELDS} for i in lst]
        if canon(strip(items)) != canon(strip(data.get(sec) or [])) and not problems:
            fail("section %s agrees release by release but is not in canonical form (run --write)" % sec)
    check_annotations(data, F, rels)
    check_hops(data, F, rels)
    check_avoid(data, F, rels)
    check_sources(data, F)
    return finish(t0)


def finish(t0):
    dt = time.time() - t0
    if problems:
        print("FAILED: %d mismatch(es) (%.1fs)" % (len(problems), dt))
        return 1
    print("OK: the release data agrees with the tags (%.1fs)" % dt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
