"""The checks: self-consistency (0), per release (1), schema transitions (2) and the
hand-written sections (3)."""
import json
import re

from .common import (COMPAT_YAML, CRD_VALUES, DEPLOYMENT, RELEASE_MANAGED_KEYS, SCHEMA, VALUES,
                     VERSION_GO, canon, fail, info, vt)
from .generate import (HAND_FIELDS, MISSING, chart_gate_defects, controller_env, crd_state,
                       docs_for, transitions)


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
