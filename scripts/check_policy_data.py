#!/usr/bin/env python3
"""Cross-check karpdoctor's controller-policy.json against the upstream reference data.

stdlib only.  Usage:
    python3 scripts/check_policy_data.py [--data data/controller-policy.json] [--ref DIR] [--fm failure-modes.md] [-v]

Checks
  0. self-consistency of the data file (version ranges, feature ids, source ids, placeholders)
  1. for every parseable reference/v*.json: the (action, resource) pairs the data says are needed
     at that release == the pairs the release's template grants          <- the main check
  2. same with the Sid: (sid, action, resource) triples
  3. per-Sid Condition blocks (canonicalised)
  4. managed policy names, node role (name, path, managed policies), queue properties,
     queue policy statements, EventBridge rule patterns
  5. releases described only in failure-modes.md (1.13.0, 1.14.1): Sid -> actions and
     Sid -> resources from the §2.1 table, node-role policies and rule detail-types from §2.1
  Then prints the per-release deltas the data encodes.
Exit status 0 when everything agrees, 1 otherwise.
"""
import argparse
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The shared reference folder sits beside the repository (../shared), as on the developers' machines.
_SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "reference")
REF_DEFAULT = os.path.join(_SHARED, "karpenter-upstream", "reference")
FM_DEFAULT = os.path.join(_SHARED, "failure-modes.md")

# CloudFormation !Sub variables -> karpdoctor placeholders
CFN_SUBST = [
    ("${AWS::Partition}", "{partition}"),
    ("${AWS::Region}", "{region}"),
    ("${AWS::AccountId}", "{account}"),
    ("${ClusterName}", "{cluster}"),
    ("${KarpenterNodeRole.Arn}", "{nodeRoleArn}"),
    ("${KarpenterInterruptionQueue.Arn}", "{queueArn}"),
]
GETATT = {"KarpenterInterruptionQueue.Arn": "{queueArn}", "KarpenterNodeRole.Arn": "{nodeRoleArn}"}

# failure-modes.md shorthand -> karpdoctor placeholders
FM_SUBST = [("{P}", "{partition}"), ("{R}", "{region}"), ("{A}", "{account}"), ("{C}", "{cluster}"),
            ("{NODE_ROLE_ARN}", "{nodeRoleArn}")]

PLACEHOLDER_RE = re.compile(r"\{([A-Za-z][A-Za-z0-9]*)\}")

problems = []


def fail(msg):
    problems.append(msg)
    print("  MISMATCH: " + msg)


# ---------------------------------------------------------------- versions
def parse_version(s, upper=False):
    parts = s.split(".")
    if len(parts) != 3:
        raise ValueError("bad version %r" % s)
    out = []
    for p in parts:
        if p == "x":
            if not upper:
                raise ValueError("'x' only allowed in until: %r" % s)
            out.append(10 ** 9)
        else:
            out.append(int(p))
    return tuple(out)


def vkey(s):
    return parse_version(s)


def in_range(item, v):
    """item has optional since/until; v is a version tuple."""
    if "since" in item and item["since"] is not None and v < parse_version(item["since"]):
        return False
    if "until" in item and item["until"] is not None and v > parse_version(item["until"], upper=True):
        return False
    return True


# ---------------------------------------------------------------- canonical forms
def as_list(x):
    if x is None:
        return []
    return x if isinstance(x, list) else [x]


def norm_cfn(s):
    for a, b in CFN_SUBST:
        s = s.replace(a, b)
    if "${" in s:
        raise ValueError("unnormalised CloudFormation variable in %r" % s)
    return s


def norm_value(x):
    """Normalise a template JSON value (strings substituted, Fn::GetAtt resolved)."""
    if isinstance(x, str):
        return norm_cfn(x)
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, list):
        return [norm_value(i) for i in x]
    if isinstance(x, dict):
        if set(x) == {"Fn::GetAtt"}:
            return GETATT[x["Fn::GetAtt"]]
        return {k: norm_value(v) for k, v in x.items()}
    raise TypeError(type(x))


def canon_condition(cond):
    """{op: {key: value|list}} -> frozenset of (op, key, sorted tuple of strings)."""
    out = set()
    for op, kv in (cond or {}).items():
        for k, v in kv.items():
            vals = tuple(sorted(norm_value(i) if not isinstance(i, str) else i for i in as_list(v)))
            out.add((op, norm_cfn(k), vals))
    return frozenset(out)


def canon_statement(st):
    """Canonical, hashable form of a whole IAM statement (for queue policies)."""
    def c(x):
        if isinstance(x, dict):
            return tuple(sorted((k, c(v)) for k, v in x.items()))
        if isinstance(x, list):
            return ("list",) + tuple(sorted(c(i) for i in x))
        return ("list", x)  # a scalar equals a one-element list
    return c(norm_value(st))


# ---------------------------------------------------------------- data model
def statement_id(st):
    return st.get("sid") or st.get("id")


def data_view(data, vs):
    """What the data says for release vs: {sid: {"actions": set, "resources": set, "cond": frozenset}}."""
    v = parse_version(vs)
    view = {}
    for st in data["statements"]:
        if not in_range(st, v):
            continue
        acts = {a["action"] for a in st["actions"] if in_range(a, v)}
        ress = {r["arn"] for r in st["resources"] if in_range(r, v)}
        conds = [c for c in st["conditions"] if in_range(c, v)]
        if len(conds) > 1:
            fail("%s: %d condition variants in effect at %s" % (statement_id(st), len(conds), vs))
        cond = canon_condition(conds[0]["condition"]) if conds else frozenset()
        if acts and ress:
            view[statement_id(st)] = {"actions": acts, "resources": ress, "cond": cond,
                                      "group": st.get("policyGroup")}
    return view


def pairs(view):
    return {(a, r) for s in view.values() for a in s["actions"] for r in s["resources"]}


def triples(view):
    return {(sid, a, r) for sid, s in view.items() for a in s["actions"] for r in s["resources"]}


def template_view(tpl):
    view = {}
    for pname, doc in tpl["controllerPolicies"].items():
        pol = json.loads(doc) if isinstance(doc, str) else doc
        for st in pol["Statement"]:
            if st.get("Effect") != "Allow":
                fail("template statement %s is not Allow" % st.get("Sid"))
            sid = st.get("Sid")
            if sid in view:
                fail("duplicate Sid %s in template" % sid)
            view[sid] = {"actions": set(as_list(st["Action"])),
                         "resources": {norm_cfn(r) for r in as_list(st["Resource"])},
                         "cond": canon_condition(norm_value(st.get("Condition", {}))),
                         "policy": norm_cfn(pname)}
    return view


# ---------------------------------------------------------------- checks
def check_self(data):
    print("== 0. self-consistency")
    n0 = len(problems)
    features = set(data["features"])
    sources = set(data["sources"])
    placeholders = set(data["placeholders"])
    ids = set()

    def check_range(where, item, outer=None):
        try:
            s = parse_version(item["since"]) if item.get("since") else None
            u = parse_version(item["until"], upper=True) if item.get("until") else None
        except (ValueError, KeyError) as e:
            fail("%s: %s" % (where, e))
            return
        if s and u and s > u:
            fail("%s: since > until" % where)
        if outer:
            os_, ou = outer
            if s and os_ and s < os_:
                fail("%s: since before its statement's since" % where)
            if u and ou and u > ou:
                fail("%s: until after its statement's until" % where)

    def check_src(where, item):
        for sid in item.get("src", []):
            if sid not in sources:
                fail("%s: unknown source id %s" % (where, sid))

    def check_ph(where, text):
        for m in PLACEHOLDER_RE.findall(text):
            if m not in placeholders:
                fail("%s: undefined placeholder {%s}" % (where, m))

    def walk_ph(where, x):
        if isinstance(x, str):
            check_ph(where, x)
        elif isinstance(x, list):
            for i in x:
                walk_ph(where, i)
        elif isinstance(x, dict):
            for k, v in x.items():
                check_ph(where, k)
                walk_ph(where, v)

    for st in data["statements"]:
        sid = statement_id(st)
        if not sid or sid in ids:
            fail("statement id missing or duplicate: %r" % sid)
        ids.add(sid)
        if st["feature"] not in features:
            fail("%s: unknown feature %s" % (sid, st["feature"]))
        if not st.get("featureDescription"):
            fail("%s: featureDescription missing" % sid)
        check_range(sid, st)
        check_src(sid, st)
        outer = (parse_version(st["since"]), parse_version(st["until"], True) if st.get("until") else None)
        for kind in ("actions", "resources", "conditions"):
            for it in st[kind]:
                label = "%s.%s[%s]" % (sid, kind, it.get("action") or it.get("arn") or it.get("since"))
                check_range(label, it, outer)
                check_src(label, it)
                if it.get("feature") and it["feature"] not in features:
                    fail("%s: unknown feature %s" % (label, it["feature"]))
        for it in st["resources"]:
            check_ph(sid, it["arn"])
        for c in st["conditions"]:
            walk_ph(sid, c["condition"])
        sim = st["simulation"]
        for r in sim["resourceArns"]:
            check_range(sid + ".simulation", r)
            check_ph(sid + ".simulation", r["arn"])
        for ce in sim["contextEntries"]:
            check_range(sid + ".context " + ce["key"], ce)
            if ce["type"] not in ("string", "stringList", "boolean"):
                fail("%s: bad context type %s" % (sid, ce["type"]))
            if ("value" in ce) == ("simulateEach" in ce):
                fail("%s: context %s needs exactly one of value/simulateEach" % (sid, ce["key"]))
            walk_ph(sid + ".context", [ce["key"], ce.get("value", ""), ce.get("simulateEach", [])])
        # exactly one condition variant at every covered release where the statement is in effect
        for vs in data["versions"]["fromTemplates"] + data["versions"]["fromFailureModesOnly"]:
            v = parse_version(vs)
            if in_range(st, v) and st["conditions"]:
                n = sum(in_range(c, v) for c in st["conditions"])
                if n != 1 and not (n == 0 and sid == "AllowZonalShiftStatusReadOnly" and vs.startswith("1.12.")):
                    fail("%s: %d condition variants at %s" % (sid, n, vs))
    for ia in data["installActions"]:
        if ia["feature"] not in features:
            fail("installAction %s: unknown feature %s" % (ia["action"], ia["feature"]))
        check_src("installAction " + ia["action"], ia)
        for r in ia["simulation"]["resourceArns"]:
            check_ph("installAction " + ia["action"], r["arn"])
        for ce in ia["simulation"]["contextEntries"]:
            walk_ph("installAction " + ia["action"], [ce["key"], ce.get("value", "")])
    for p in data["controllerManagedPolicies"]:
        check_range("managedPolicy " + p["name"], p)
        check_src("managedPolicy " + p["name"], p)
        check_ph("managedPolicy", p["name"])
    for sec in ("nodeRole", "interruption"):
        check_src(sec, data[sec])
    for r in data["interruption"]["rules"]:
        check_range("rule " + r["id"], r)
        check_src("rule " + r["id"], r)
    for mp in data["nodeRole"]["managedPolicies"]:
        for ref in mp["reference"]:
            check_range("nodeRole " + ref["policy"], ref)
            if ref["policy"] not in mp["anyOf"]:
                fail("nodeRole %s: reference policy not in anyOf" % ref["policy"])
    for vs in data["versions"]["fromTemplates"] + data["versions"]["fromFailureModesOnly"]:
        if parse_version(vs) < parse_version(data["versions"]["minimum"]):
            fail("version %s below minimum" % vs)
    if len(problems) == n0:
        print("  ok (%d statements, %d install actions)" % (len(data["statements"]), len(data["installActions"])))


def data_node_policies(data, v):
    return {ref["policy"] for mp in data["nodeRole"]["managedPolicies"] for ref in mp["reference"] if in_range(ref, v)}


def data_rules(data, v):
    return {(tuple(sorted(r["eventPattern"]["source"])), tuple(sorted(r["eventPattern"]["detail-type"])))
            for r in data["interruption"]["rules"] if in_range(r, v)}


def check_template(data, path):
    try:
        tpl = json.load(open(path))
        vs = tpl["version"]
        tview = template_view(tpl)
    except Exception as e:  # unparseable -> reported, not fatal
        print("== %s: skipped (cannot parse: %s)" % (os.path.basename(path), e))
        return None
    v = parse_version(vs)
    print("== %s (release %s)" % (os.path.basename(path), vs))
    n0 = len(problems)
    if vs not in data["versions"]["fromTemplates"]:
        fail("%s not listed in versions.fromTemplates" % vs)
    if v < parse_version(data["versions"]["minimum"]):
        print("  below versions.minimum; skipped")
        return vs
    dview = data_view(data, vs)

    # 1. (action, resource) pairs
    dp, tp = pairs(dview), pairs(tview)
    for a, r in sorted(dp - tp):
        fail("%s: data needs (%s, %s) but the template does not grant it" % (vs, a, r))
    for a, r in sorted(tp - dp):
        fail("%s: template grants (%s, %s) but the data does not list it" % (vs, a, r))
    print("  1. (action, resource) pairs: data %d, template %d, %s" % (len(dp), len(tp), "equal" if dp == tp else "DIFFER"))

    # 2. (sid, action, resource)
    dt, tt = triples(dview), triples(tview)
    for t in sorted(dt ^ tt, key=str):
        fail("%s: (sid, action, resource) %s only in %s" % (vs, t, "data" if t in dt else "template"))
    print("  2. (sid, action, resource) triples: %s" % ("equal" if dt == tt else "DIFFER"))

    # 3. conditions per Sid
    bad = 0
    for sid in sorted(set(dview) & set(tview)):
        if dview[sid]["cond"] != tview[sid]["cond"]:
            bad += 1
            fail("%s: Condition of %s differs:\n      data     %s\n      template %s"
                 % (vs, sid, sorted(dview[sid]["cond"]), sorted(tview[sid]["cond"])))
    print("  3. conditions of %d Sids: %s" % (len(set(dview) & set(tview)), "equal" if not bad else "DIFFER"))

    # 4a. managed policy names
    dnames = {p["name"] for p in data["controllerManagedPolicies"] if in_range(p, v)}
    tnames = {s["policy"] for s in tview.values()}
    if dnames != tnames:
        fail("%s: managed policies data %s template %s" % (vs, sorted(dnames), sorted(tnames)))
    # 4b. node role
    nr = tpl["nodeRole"]
    tnp = {norm_cfn(a).split("/")[-1] for a in nr["managedPolicyArns"]}
    dnp = data_node_policies(data, v)
    if tnp != dnp:
        fail("%s: node role policies data %s template %s" % (vs, sorted(dnp), sorted(tnp)))
    if norm_cfn(nr["roleName"]) != data["nodeRole"]["roleName"] or nr["path"] != data["nodeRole"]["path"]:
        fail("%s: node role name/path differ" % vs)
    # 4c. queue
    q, dq = tpl["queue"], data["interruption"]["queue"]
    tq = {k: v_ for k, v_ in q.items() if k != "QueueName"}
    if norm_cfn(q["QueueName"]) != dq["name"] or tq != dq["properties"]:
        fail("%s: queue differs: template %s" % (vs, q))
    tqp = {canon_statement(s) for s in tpl["queuePolicy"]["Statement"]}
    dqp = {canon_statement(s["statement"]) for s in dq["policy"] if in_range(s, v)}
    if tqp != dqp or tpl["queuePolicy"].get("Id") != dq["policyId"]:
        fail("%s: queue policy differs" % vs)
    # 4d. rules
    trules = {(tuple(sorted(r["eventPattern"]["source"])), tuple(sorted(r["eventPattern"]["detail-type"])))
              for r in tpl["rules"]}
    if trules != data_rules(data, v):
        fail("%s: rules differ: template %s data %s" % (vs, sorted(trules), sorted(data_rules(data, v))))
    known_ids = {r["id"] for r in data["interruption"]["rules"] if in_range(r, v) and r.get("referenceLogicalIdKnown", True)}
    if {r["logicalId"] for r in tpl["rules"]} != known_ids:
        fail("%s: rule logical ids differ" % vs)
    print("  4. policy names, node role, queue, queue policy, rules: %s" % ("equal" if len(problems) == n0 else "see above"))
    return vs


def parse_fm_21(fm_text):
    """Sid -> (policy group, actions, resources) from the §2.1 table; plus node policies and detail-types."""
    sec = fm_text.split("### 2.1", 1)[1].split("### 2.2", 1)[0]
    rows = {}
    prev_res = None
    for line in sec.splitlines():
        if not line.startswith("| ") or line.startswith("| Policy") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        group, sid, acts_c, res_c = cells[0], cells[1], cells[2], cells[3]
        acts, svc = set(), None
        for tok in re.findall(r"`([^`]+)`", acts_c):
            if ":" in tok:
                svc = tok.split(":")[0]
            else:
                tok = svc + ":" + tok
            acts.add(tok)
        if res_c.startswith("same six types") or res_c == "same":
            res = set(prev_res)
        elif res_c == "queue ARN":
            res = {"{queueArn}"}
        else:
            res = set()
            for tok in re.findall(r"`([^`]+)`", res_c):
                if tok.startswith("…"):
                    tok = "arn:{P}:ec2:{R}" + tok[1:]
                elif not tok.startswith("arn:") and not tok.startswith("{") and tok != "*":
                    tok = "arn:{P}:ec2:{R}:*:" + tok
                for a, b in FM_SUBST:
                    tok = tok.replace(a, b)
                res.add(tok)
        prev_res = res
        rows[sid] = (group, acts, res)
    para = sec.split("The same template also defines the node role", 1)[1]
    node = set(re.findall(r"`(Amazon[A-Za-z0-9_]+)`", para.split("an SQS queue", 1)[0]))
    details = set(re.findall(r"`(EC2 [^`]+|AWS Health Event)`", para))
    return rows, node, details


def check_fm(data, fm_path, releases):
    try:
        rows, node, details = parse_fm_21(open(fm_path, encoding="utf-8").read())
    except Exception as e:
        print("== failure-modes §2.1: skipped (%s)" % e)
        return
    for vs in releases:
        v = parse_version(vs)
        print("== failure-modes.md §2.1 table vs data at %s" % vs)
        n0 = len(problems)
        dview = data_view(data, vs)
        if set(rows) != set(dview):
            fail("%s: Sids data %s vs §2.1 %s" % (vs, sorted(set(dview) ^ set(rows)), ""))
        for sid in sorted(set(rows) & set(dview)):
            g, acts, res = rows[sid]
            if acts != dview[sid]["actions"]:
                fail("%s %s: actions data %s §2.1 %s" % (vs, sid, sorted(dview[sid]["actions"]), sorted(acts)))
            if res != dview[sid]["resources"]:
                fail("%s %s: resources data %s §2.1 %s" % (vs, sid, sorted(dview[sid]["resources"]), sorted(res)))
            if g != dview[sid]["group"]:
                fail("%s %s: policy group data %s §2.1 %s" % (vs, sid, dview[sid]["group"], g))
        groups = {p["group"] for p in data["controllerManagedPolicies"] if in_range(p, v)}
        if groups != {r[0] for r in rows.values()}:
            fail("%s: managed policy groups differ" % vs)
        if node != data_node_policies(data, v):
            fail("%s: node policies data %s §2.1 %s" % (vs, sorted(data_node_policies(data, v)), sorted(node)))
        ddet = {d for _, dts in data_rules(data, v) for d in dts}
        if ddet != details:
            fail("%s: rule detail-types data %s §2.1 %s" % (vs, sorted(ddet), sorted(details)))
        if len(problems) == n0:
            print("  ok: %d Sids, actions, resources, policy groups, node policies, rule detail-types equal" % len(rows))


def print_deltas(data):
    print("== per-release deltas encoded in the data")
    allv = sorted(set(data["versions"]["fromTemplates"] + data["versions"]["fromFailureModesOnly"]), key=vkey)
    prev = None
    for vs in allv:
        view = data_view(data, vs)
        v = parse_version(vs)
        cur = {"tr": triples(view), "cond": {k: s["cond"] for k, s in view.items()},
               "node": data_node_policies(data, v), "rules": data_rules(data, v),
               "pols": {p["name"] for p in data["controllerManagedPolicies"] if in_range(p, v)},
               "qp": {s["id"] for s in data["interruption"]["queue"]["policy"] if in_range(s, v)}}
        if prev is None:
            print("  %-7s baseline: %d Sids, %d (sid, action, resource) triples" % (vs, len(view), len(cur["tr"])))
        else:
            lines = []
            add, rem = cur["tr"] - prev["tr"], prev["tr"] - cur["tr"]
            for label, s in (("+", add), ("-", rem)):
                by = {}
                for sid, a, r in s:
                    by.setdefault((sid, a), []).append(r)
                for (sid, a), rs in sorted(by.items()):
                    lines.append("%s %s %s on %s" % (label, sid, a, ", ".join(sorted(rs))))
            for sid in sorted(set(cur["cond"]) & set(prev["cond"])):
                if cur["cond"][sid] != prev["cond"][sid]:
                    lines.append("~ %s condition changed" % sid)
            for k, label in (("node", "node role policies"), ("rules", "rules"), ("pols", "managed policies"), ("qp", "queue policy")):
                if cur[k] != prev[k]:
                    lines.append("~ %s: +%s -%s" % (label, sorted(cur[k] - prev[k]), sorted(prev[k] - cur[k])))
            print("  %-7s %s" % (vs, "no change" if not lines else lines[0]))
            for l in lines[1:]:
                print("          " + l)
        prev = cur


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(HERE, "..", "data", "controller-policy.json"))
    ap.add_argument("--ref", default=REF_DEFAULT)
    ap.add_argument("--fm", default=FM_DEFAULT)
    ap.add_argument("--no-deltas", action="store_true")
    args = ap.parse_args()
    data = json.load(open(args.data))
    check_self(data)
    seen = []
    for path in sorted(glob.glob(os.path.join(args.ref, "v*.json")),
                       key=lambda p: vkey(os.path.basename(p)[1:-5]) if re.match(r"v\d+\.\d+\.\d+\.json$", os.path.basename(p)) else (0,)):
        vs = check_template(data, path)
        if vs:
            seen.append(vs)
    missing = set(data["versions"]["fromTemplates"]) - set(seen)
    if missing:
        fail("versions.fromTemplates lists releases without a template: %s" % sorted(missing))
    fm_only = [v for v in ("1.13.0", "1.14.1") if v in data["versions"]["fromFailureModesOnly"]]
    check_fm(data, args.fm, fm_only)
    if not args.no_deltas:
        print_deltas(data)
    print()
    if problems:
        print("FAIL: %d mismatch(es)" % len(problems))
        return 1
    print("PASS: %d templates cross-checked (%s); §2.1 checked at %s" % (len(seen), ", ".join(seen), ", ".join(fm_only)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
