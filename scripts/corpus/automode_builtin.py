# EKS Auto Mode's built-in NodePools edited in place (KD4201's sub-rule f). EKS owns them and
# overwrites edits: terraform-aws-eks#3241, "do not modify the built in nodeclass or nodepools.
# Your config will appear to work until it is overwritten by AWS". (Helpers from automode.py.)
import copy

# The built-in general-purpose pool edited to take spot capacity too, the usual wish (the
# built-in pools are on-demand only): it works until EKS writes its own spec back.
_gp = copy.deepcopy(_am_pools[0])
_gp["spec"]["template"]["spec"]["requirements"][0]["values"] = ["spot", "on-demand"]
_b = _am_alone(
    "EKS Auto Mode's built-in general-purpose NodePool was edited with kubectl to allow spot as well as on-demand capacity; EKS owns its built-in pools and overwrites edits to them, so the change works only until EKS writes the pool back (terraform-aws-eks#3241).",
    [_gp, _am_pools[1]], [_am_class()])
write("automode-builtin-pool-edited", _b, ["KD4201"], exit_code=0, roots=[], skipped=_am_skipped)
