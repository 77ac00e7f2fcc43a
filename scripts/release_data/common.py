"""Constants and the shared mismatch log of scripts/check_release_data.py.

Every check reports through fail(), so the entry point can tell from `problems` whether
anything disagreed; info() prints only with -v.
"""
import json
import re

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

# Filled by fail(); the entry point reads it for the exit status.
problems = []
# Set by the entry point from -v; read here at call time, so assign common.VERBOSE.
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
