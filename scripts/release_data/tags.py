"""Reading the mirrors: git access, YAML helpers and the facts of each provider release."""
import os
import re
import subprocess
import sys

import yaml

from .common import (CRD_VALUES, DEPLOYMENT, OPERATOR_GO, OPTIONS_GO, TAG_RE, VALUES, VERSION_GO,
                     canon, vt)

# The C loader (there only when PyYAML was built with libyaml) reads the CRDs much faster.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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


# ---------------------------------------------------------------- release tags
def mirror_releases(F, first, last=None):
    """Provider tags vMAJOR.MINOR.PATCH from first (to last) as sorted version strings."""
    out = []
    for t in F.p.tags():
        m = TAG_RE.match(t)
        if m:
            v = "%s.%s.%s" % m.groups()
            if vt(v) >= vt(first) and (last is None or vt(v) <= vt(last)):
                out.append(v)
    return sorted(out, key=vt)
