#!/usr/bin/env python3
"""Where each table of efb.p4 went, from the compiler's context.json: per table its size and,
per stage, how it is matched (exact tables list their RAM ways' memory, TCAM tables their
blocks, a hash-action table matches without memory) and the RAMs its direct action data
takes there. Run by compile.sh; runnable alone on a committed context.json.

Usage: python3 p4/resources.py p4/compiled/pipe/context.json
"""
import json
import sys


def memory(allocations):
    """Memory kinds and units of a list of memory_resource_allocation objects."""
    kinds, units = set(), 0
    for a in filter(None, allocations):
        kinds.add(a.get("memory_type", "?"))
        units += sum(len(u.get("memory_units", [])) for u in a.get("memory_units_and_vpns", []))
    return "+".join(sorted(kinds)), units


def match_memory(stage_table):
    """The memory a stage table matches in: its own, or its ways' (exact match)."""
    allocations = [stage_table.get("memory_resource_allocation")]
    allocations += [w.get("memory_resource_allocation") for w in stage_table.get("ways", [])]
    return memory(allocations)


def action_data(by_name, table, stage):
    """RAM units of the table's direct action data in `stage` (0 when in the match word)."""
    units = 0
    for ref in table.get("action_data_table_refs") or []:
        if ref.get("how_referenced") != "direct" or ref["name"] not in by_name:
            continue
        for s in by_name[ref["name"]].get("stage_tables", []):
            if s.get("stage_number") == stage:
                units += memory([s.get("memory_resource_allocation")])[1]
    return units


def main(path):
    context = json.load(open(path))
    print(f"{context['program_name']} for {context['target']}, compiler {context['compiler_version']}")
    print(f"{'table':34} {'entries':>8}  stage:match-memory(units)[+action-data RAMs] ...")
    by_name = {t["name"]: t for t in context["tables"]}
    last = 0
    for t in context["tables"]:
        stages = t.get("match_attributes", {}).get("stage_tables", [])
        if t.get("direction") == "ingress":
            last = max([last] + [s.get("stage_number", 0) for s in stages])
        if t.get("table_type") != "match" or not t["name"].startswith(("EfbIngress.", "EfbEgress.")):
            continue
        placed = []
        for s in stages:
            kind, units = match_memory(s)
            if not kind:
                kind = "hash_action" if s.get("stage_table_type") == "hash_action" else "none"
            text = f"{s.get('stage_number')}:{kind}" + (f"({units})" if units else "")
            data = action_data(by_name, t, s.get("stage_number"))
            placed.append(text + (f"+ad({data})" if data else ""))
        print(f"{t['name']:34} {t.get('size', 0):>8}  {' '.join(placed)}")
    print(f"ingress uses stages 0..{last} of the 12 (the compiler's own tables included)")


if __name__ == "__main__":
    main(sys.argv[1])
