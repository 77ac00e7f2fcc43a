"""Modules of scripts/check_release_data.py, split by concern to keep each file short.

common    constants, fail()/info() and the shared `problems` list
tags      git access to the mirrors, YAML helpers, the facts of each release
generate  range helpers, the generators of the derivable sections, the --write merge
check     self-consistency, per-release checks, transitions, hand-written sections
"""
