#!/usr/bin/env python3
"""Cross-check data/karpenter-releases.json against the upstream git tags.

This is a maintainer's tool, not part of CI: it reads local git mirrors of
aws/karpenter-provider-aws ("provider", default /work/.mirror/aws+karpenter-provider-aws/repo)
and kubernetes-sigs/karpenter ("core", default /work/.mirror/kubernetes-sigs+karpenter/repo).
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

This file is the command line; the work is in scripts/release_data/ (tags.py reads the
mirrors, generate.py derives the sections and merges --write, check.py runs the checks).
"""
import argparse
import json
import os
import sys
import time

# The modules below need PyYAML; importing it here first turns a missing install into
# this hint instead of a traceback from inside the package.
try:
    import yaml  # noqa: F401
except ImportError:  # pragma: no cover - environment dependent
    sys.stderr.write("check_release_data.py needs PyYAML; run it with the repository's venv:\n"
                     "    .venv-emulator/bin/python scripts/check_release_data.py\n")
    sys.exit(2)

HERE = os.path.dirname(os.path.abspath(__file__))
# The modules live in scripts/release_data/ beside this file.  Python puts the script's
# folder on sys.path only for a plain `python3 scripts/...` run (not with -P, or when
# loaded some other way), so add it here to import them from any working directory.
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from release_data import common  # noqa: E402
from release_data.check import (check_annotations, check_avoid, check_consistency, check_hops,  # noqa: E402
                                check_release, check_sources, check_transitions)
from release_data.common import FIRST_RELEASE, canon, fail, problems, vt  # noqa: E402
from release_data.generate import HAND_FIELDS, docs_matrix, dump, generate, merge_hand  # noqa: E402
from release_data.tags import Facts, Repo, mirror_releases  # noqa: E402

ROOT = os.path.dirname(HERE)
DATA_DEFAULT = os.path.join(ROOT, "data", "karpenter-releases.json")
PROVIDER_DEFAULT = "/work/.mirror/aws+karpenter-provider-aws/repo"
CORE_DEFAULT = "/work/.mirror/kubernetes-sigs+karpenter/repo"


# ---------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA_DEFAULT)
    ap.add_argument("--provider", default=PROVIDER_DEFAULT, help="git mirror of aws/karpenter-provider-aws")
    ap.add_argument("--core", default=CORE_DEFAULT, help="git mirror of kubernetes-sigs/karpenter")
    ap.add_argument("--write", action="store_true", help="regenerate the derivable sections in place")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    # info() reads common.VERBOSE, so set it there rather than in a local name.
    common.VERBOSE = args.verbose
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
