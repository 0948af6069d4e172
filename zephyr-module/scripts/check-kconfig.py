#!/usr/bin/env python3
"""Checks qfabric's Kconfig without a Zephyr tree: what CONFIG_QFABRIC=y alone gives.

Reads the repository's Kconfig together with zephyr-module/kconfig/zephyr-symbols.kconfig (the
Zephyr symbols it names, declared as Zephyr v4.3.0 declares them) with kconfiglib, and fails
when
  - qfabric's Kconfig names a symbol that neither it nor the list declares;
  - a `select` of qfabric's would force a symbol whose own dependencies are unmet;
  - with CONFIG_QFABRIC=y alone, a qfabric option that defaults to y stays n for want of a
    Zephyr symbol (the module would promise a feature and silently leave it out), or the hook
    mode is not the patched kernel's;
  - CONFIG_QFABRIC=y on an SMP kernel is accepted (it must be refused at configure time).
With --zephyr ZEPHYR_BASE it also checks every entry of the list against that tree's own
declaration (same type; a prompt where the list has one).

Usage: check-kconfig.py [--zephyr ZEPHYR_BASE]   (needs kconfiglib: python3-kconfiglib)
"""

import argparse
import os
import re
import sys
import tempfile

import kconfiglib

TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SYMBOL_LIST = os.path.join(TOP, "zephyr-module", "kconfig", "zephyr-symbols.kconfig")
# Hook mode and features CONFIG_QFABRIC=y alone must give (the README's "Use" says so).
EXPECTED_ALONE = {
    "SCHED_DEADLINE": "y",
    "QFABRIC_EDF": "y",
    "QFABRIC_CBS": "y",
    "QFABRIC_ADMISSION": "y",
    "QFABRIC_HOOKS_KERNEL_PATCH": "y",
    "THREAD_ABORT_HOOK": "y",
    "INSTRUMENT_THREAD_SWITCHING": "y",
}


def load(assignments, settable=()):
    """qfabric's Kconfig beside the symbol list, with `assignments` (NAME=VALUE lines);
    `settable` declares symbols the list leaves undeclared as plain options, so that a
    scenario can turn them on."""
    with tempfile.TemporaryDirectory() as scratch:
        root = os.path.join(scratch, "Kconfig")
        with open(root, "w", encoding="utf-8") as f:
            f.write("".join(f'config {name}\n\tbool "{name}"\n' for name in settable))
            f.write(f'source "{SYMBOL_LIST}"\nsource "{os.path.join(TOP, "Kconfig")}"\n')
        kconf = kconfiglib.Kconfig(root, warn_to_stderr=False, suppress_traceback=True)
        config = os.path.join(scratch, "prj.conf")
        with open(config, "w", encoding="utf-8") as f:
            f.write("".join(f"CONFIG_{line}\n" for line in assignments))
        kconf.load_config(config)
    return kconf


def qfabric_nodes(kconf):
    """The menu nodes defined in the repository's Kconfig."""
    root = os.path.join(TOP, "Kconfig")
    return [
        node
        for node in kconf.node_iter()
        if os.path.normpath(os.path.join(kconf.srctree, node.filename)) == root
        or os.path.normpath(node.filename) == root
    ]


def referenced(expr):
    """Every symbol an expression names."""
    return [sym for sym in kconfiglib.expr_items(expr) if isinstance(sym, kconfiglib.Symbol)]


def check_names(kconf):
    errors = []
    for node in qfabric_nodes(kconf):
        item = node.item
        exprs = [node.dep]
        if isinstance(item, (kconfiglib.Symbol, kconfiglib.Choice)):
            exprs += [default for default, cond in item.defaults]
            exprs += [cond for default, cond in item.defaults]
        if isinstance(item, kconfiglib.Symbol):
            exprs += [target for target, cond in item.selects + item.implies]
            exprs += [cond for target, cond in item.selects + item.implies]
        for expr in exprs:
            for sym in referenced(expr):
                if sym.is_constant or sym.nodes:
                    continue
                errors.append(
                    f"Kconfig:{node.linenr}: names {sym.name}, which neither qfabric's Kconfig "
                    f"nor {os.path.relpath(SYMBOL_LIST, TOP)} declares"
                )
    return sorted(set(errors))


def unmet_deps(sym):
    """The dependencies of `sym` (as strings) that are n."""
    return [
        kconfiglib.expr_str(expr)
        for expr in kconfiglib.split_expr(sym.direct_dep, kconfiglib.AND)
        if kconfiglib.expr_value(expr) == 0
    ]


def check_alone():
    kconf = load(["QFABRIC=y"])
    errors = []
    for name, value in EXPECTED_ALONE.items():
        sym = kconf.syms[name]
        if sym.str_value != value:
            errors.append(
                f"CONFIG_QFABRIC=y alone gives {name}={sym.str_value}, not {value}"
                + (f" (unmet: {', '.join(unmet_deps(sym))})" if unmet_deps(sym) else "")
            )
    for node in qfabric_nodes(kconf):
        sym = node.item
        if not isinstance(sym, kconfiglib.Symbol) or not sym.name.startswith("QFABRIC"):
            continue
        defaults_y = any(
            kconfiglib.expr_value(default) == 2 for default, cond in sym.defaults
        ) and sym.type == kconfiglib.BOOL
        if not defaults_y or sym.str_value == "y":
            continue
        zephyr_unmet = [
            dep for dep in unmet_deps(sym) if not dep.lstrip("(!").startswith("QFABRIC")
        ]
        if zephyr_unmet:
            errors.append(
                f"{sym.name} defaults to y, but CONFIG_QFABRIC=y alone leaves it n for want of "
                f"{', '.join(zephyr_unmet)}: select it from QFABRIC, or make QFABRIC depend on it"
            )
    # A select whose target's own dependencies are unmet: kconfiglib warns about it.
    for warning in kconf.warnings:
        if "unsatisfied direct dependencies" in warning or "select" in warning:
            errors.append("CONFIG_QFABRIC=y alone: " + warning.splitlines()[0])
    return errors


def check_refused():
    errors = []
    for zephyr in (["USE_SWITCH=y", "SMP=y"], ["THREAD_CUSTOM_DATA=y", "POLL=y",
                                                "THREAD_STACK_INFO=y", "CMSIS_RTOS_V1=y"]):
        kconf = load(zephyr + ["QFABRIC=y"],
                     settable=[a.split("=")[0] for a in zephyr[:-1]])
        wanted = zephyr[-1].split("=")[0]
        if kconf.syms[wanted].str_value != "y":
            errors.append(f"scenario {', '.join(zephyr)}: {wanted} did not take")
        elif kconf.syms["QFABRIC"].str_value != "n":
            errors.append(f"CONFIG_QFABRIC=y is accepted with {', '.join(zephyr)}; it must be "
                          "refused at configure time")
    return errors


DECLARATION = re.compile(r"^(?:menu)?config\s+(\w+)\s*$")
TYPE = re.compile(r"^\s+(bool|int|hex|string|tristate)\b(.*)$")


def declarations(path):
    """{name: [(type, has_prompt)]} of every `config`/`menuconfig` in a Kconfig file."""
    found = {}
    current = None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = DECLARATION.match(line)
                if m:
                    current = m.group(1)
                    continue
                t = TYPE.match(line)
                if current and t:
                    found.setdefault(current, []).append((t.group(1), bool(t.group(2).strip())))
                    current = None
                elif line.strip() and not line.startswith(("\t", " ")):
                    current = None
    except OSError:
        pass
    return found


def check_against(zephyr_base):
    listed = declarations(SYMBOL_LIST)
    tree = {}
    for base in [zephyr_base] + [
        os.path.join(zephyr_base, "..", "modules", d) for d in ("lib", "hal")
    ]:
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "build"]
            for name in filenames:
                if name.startswith("Kconfig"):
                    for sym, decls in declarations(os.path.join(dirpath, name)).items():
                        if sym in listed:
                            tree.setdefault(sym, []).extend(decls)
    errors = []
    for sym, [(kind, prompt)] in ((s, d[:1]) for s, d in listed.items()):
        decls = tree.get(sym)
        if not decls:
            errors.append(f"{sym}: listed, but {zephyr_base} declares no such symbol")
        elif kind not in {k for k, p in decls}:
            errors.append(f"{sym}: listed as {kind}, {zephyr_base} declares it "
                          f"{'/'.join(sorted({k for k, p in decls}))}")
        elif prompt and not any(p for k, p in decls):
            errors.append(f"{sym}: listed with a prompt, {zephyr_base} declares it without one")
    return errors, len(listed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zephyr", metavar="ZEPHYR_BASE",
                        help="also check the symbol list against this Zephyr tree")
    args = parser.parse_args()
    errors = check_names(load([])) + check_alone() + check_refused()
    if args.zephyr:
        tree_errors, count = check_against(args.zephyr)
        errors += tree_errors
        if not tree_errors:
            print(f"kconfig: the {count} listed Zephyr symbols match {args.zephyr}")
    for error in errors:
        print(f"kconfig: {error}", file=sys.stderr)
    if errors:
        return 1
    alone = load(["QFABRIC=y"])
    print("kconfig: CONFIG_QFABRIC=y alone gives "
          + ", ".join(f"{n}={alone.syms[n].str_value}" for n in EXPECTED_ALONE)
          + "; refused with SMP and with CMSIS-RTOS v1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
