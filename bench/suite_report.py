#!/usr/bin/env python3
"""The performance suite's report (bench/suite.py writes results.json on the GPU machine):
one markdown table (per case: gpix CUDA, gpix OpenCL, each peer, the best peer, gpix's speed-up
over it, gpix's time over the device copy of the same array), the first-call table, a summary
against issue 17's targets, and the plot (speed-up over the best peer, one bar per case, log
scale).

    suite_report.py RESULTS.json [--md OUT.md] [--png docs/performance.png]
                    [--append bench/RESULTS.md] [--command TEXT]

--append adds a dated section (device, commit, command, the summary and both tables) to the end
of the given file. Times are medians in ms; the speed-up is the best peer's median over gpix
CUDA's (gpix's default backend on NVIDIA cards; gpix OpenCL where CUDA has no result).
"""

import argparse
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite  # noqa: E402  (its case groups)

PEERS = [("cupy", "CuPy"), ("cucim", "cuCIM"), ("cle", "pyclesperanto")]
GPIX = [("gpix-cuda", "gpix CUDA"), ("gpix-opencl", "gpix OpenCL")]
GROUPS = list(suite.GROUPS_)  # the case groups, in the order the suite lists them
COLOURS = {
    "neighbourhood": "#4477aa",
    "morphology": "#66ccee",
    "segmentation": "#228833",
    "pointwise": "#ccbb44",
    "geometry": "#aa3377",
    "projections": "#ee6677",
    "reductions": "#bbbbbb",
}
# Issue 17: memory-bound filters within 1.5x of the copy of the same array.
MEMORY_BOUND_GROUPS = {"pointwise", "projections", "reductions"}


def memory_bound(c):
    if c["group"] in MEMORY_BOUND_GROUPS:
        return True
    if c["filter"] in ("mean_box", "minimum_box", "maximum_box"):
        return int(c["label"][1:]) <= 3
    if c["filter"] == "gaussian_blur":
        return float(c["label"][1:]) <= 3
    return False


def result(results, impl, cid):
    return results["impls"].get(impl, {}).get("results", {}).get(cid)


def ok_ms(r):
    return r["median_ms"] if r and r.get("status") == "ok" and "median_ms" in r else None


def approx_note(results, impl, filt):
    return results["impls"].get(impl, {}).get("header", {}).get("approx", {}).get(filt)


def maps(results, impl, filt):
    h = results["impls"].get(impl, {}).get("header")
    return h is not None and ("maps" not in h or filt in h["maps"])


def gpix_ms(results, cid):
    for impl, _ in GPIX:
        v = ok_ms(result(results, impl, cid))
        if v is not None:
            return v, impl
    return None, None


def converted(results, impl, c):
    """The element type a peer ran a case on where it is not the case's: the library converted
    the input when it took it (pyclesperanto pushes float64 arrays as float32). Read off the
    dtype of the copy the peer timed beside the case (its pushed input's)."""
    r = result(results, impl, c["id"]) or {}
    got = r.get("copy", "").rpartition("/")[2]
    return got if got and got != c["dtype"] else None


def best_peer(results, c):
    """The fastest peer that ran the case on its own element type (one that converted the
    input, say float64 to float32, moved half the bytes at half the precision: not the same
    work, so it is shown but never the best peer)."""
    best = None
    for impl, _ in PEERS:
        v = ok_ms(result(results, impl, c["id"]))
        if v is not None and converted(results, impl, c):
            continue
        if v is not None and (best is None or v < best[0]):
            best = (v, impl)
    return best


def speedup(results, c):
    g, _ = gpix_ms(results, c["id"])
    b = best_peer(results, c)
    return (b[0] / g) if g and b else None


def copy_ratio(results, c):
    g, impl = gpix_ms(results, c["id"])
    if g is None:
        return None
    r = result(results, impl, c["id"])
    cp = results["impls"][impl].get("copies", {}).get(r.get("copy", ""))
    return g / cp["median_ms"] if cp and cp.get("median_ms") else None


def over_target(results, c):
    """Issue 17's targets for one case: a memory-bound case within 1.5x the copy, and no case
    slower than the best peer."""
    r = copy_ratio(results, c)
    s = speedup(results, c)
    return bool((memory_bound(c) and r and r > 1.5) or (s and s < 1))


def profile_figures(results, c):
    """The profile phase's figures of one case (suite.py), with gpix CUDA's time and copy from
    the grid: None where it was not profiled."""
    e = (results.get("profile") or {}).get("cases", {}).get(c["id"])
    r = result(results, "gpix-cuda", c["id"])
    wall = ok_ms(r)
    if not e or not e.get("kernels") or wall is None:
        return None
    cp = results["impls"]["gpix-cuda"].get("copies", {}).get(r.get("copy", ""), {})
    ks = e["kernels"]

    def total(m):
        return sum(k.get(m) or 0 for k in ks)

    k_us = total("gpu__time_duration.sum") / 1e3

    def weighted(m):
        w = sum((k.get("gpu__time_duration.sum") or 0) * (k.get(m) or 0) for k in ks)
        return w / (k_us * 1e3) if k_us else 0.0

    moved = total("dram__bytes_read.sum") + total("dram__bytes_write.sum")
    copy_bytes = 2 * (cp.get("bytes") or 0)
    return dict(
        wall_us=wall * 1e3,
        kernels=len(ks),
        names=sorted({k["kernel"].split("(")[0] for k in ks}),
        kernel_us=k_us,
        traffic=moved / copy_bytes if copy_bytes else None,
        dram_pct=weighted("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        l2_pct=weighted("lts__throughput.avg.pct_of_peak_sustained_elapsed"),
        issue_pct=weighted("sm__inst_issued.avg.pct_of_peak_sustained_active"),
        occupancy_pct=weighted("sm__warps_active.avg.pct_of_peak_sustained_active"),
    )


def cause(results, c):
    """Why a case misses its target, from its profile (ncu): the first of these that holds.
    - fixed cost: over 40 % of the call's wall time is outside its kernels (launches, the
      final pass's read-back, host work);
    - traffic: its kernels move over 1.25x the copy's DRAM bytes (passes, intermediates);
    - instruction issue: 60 % or more of the issue slots busy while DRAM is under 60 % busy;
    - latency: DRAM and the issue slots both under-used (too few bytes in flight);
    - otherwise the DRAM is busy and the case is at the memory's pace for what it moves.
    "" where the case was not profiled. The figures behind it are causes_table()'s columns."""
    f = profile_figures(results, c)
    if f is None:
        return ""
    wall, k = f["wall_us"], f["kernel_us"]
    out = wall - k
    if out > 0.4 * wall:
        why = f"fixed cost: {out:.0f} of {wall:.0f} µs outside the kernels"
    elif f["traffic"] and f["traffic"] > 1.25:
        why = f"traffic: {f['traffic']:.2f}x the copy's DRAM bytes" + (
            f" over {f['kernels']} kernels" if f["kernels"] > 1 else ""
        )
    elif f["issue_pct"] >= 60 and f["dram_pct"] < 60:
        why = f"instruction issue: {f['issue_pct']:.0f}% of issue slots busy"
    elif f["dram_pct"] < 60:
        why = f"latency: occupancy {f['occupancy_pct']:.0f}%"
    else:
        why = "at the memory's pace"
    return why


def causes_table(results):
    """Every case that misses a target, with its profile's figures and cause."""
    prof = results.get("profile")
    if not prof:
        return ""
    rows = [
        "| case | shape | dtype | x copy | speed-up | call µs | kernels (µs) | DRAM bytes / "
        "copy's | DRAM % | L2 % | issue % | warps % | cause |",
        "|" + "---|" * 13,
    ]
    missing = []
    for c in results["cases"]:
        if not over_target(results, c):
            continue
        f = profile_figures(results, c)
        r, s = copy_ratio(results, c), speedup(results, c)
        head = [case_name(c), "x".join(map(str, c["shape"])), c["dtype"]]
        head += [f"{r:.2f}" if r else "—", f"{s:.2f}x" if s else "—"]
        if f is None:
            missing.append(c)
            continue
        rows.append(
            "| "
            + " | ".join(
                head
                + [
                    f"{f['wall_us']:.0f}",
                    f"{f['kernels']} ({f['kernel_us']:.0f}): {', '.join(f['names'])}",
                    f"{f['traffic']:.2f}" if f["traffic"] is not None else "—",
                    f"{f['dram_pct']:.0f}",
                    f"{f['l2_pct']:.0f}",
                    f"{f['issue_pct']:.0f}",
                    f"{f['occupancy_pct']:.0f}",
                    cause(results, c),
                ]
            )
            + " |"
        )
    note = (
        f"\nProfiled {prof.get('date', '')} at commit {prof.get('commit', '') or 'unknown'} on "
        f"{prof.get('device', '') or 'gpix CUDA'} (bench/suite.py's profile phase: one call of "
        "each case under ncu, clocks and caches left alone). call µs: gpix CUDA's median in the "
        "grid; "
        "kernels: ncu's durations summed, with the kernels' names; DRAM bytes / copy's: read "
        "plus written over twice the input's bytes (arrays that fit in L2 move fewer); DRAM %, "
        "L2 %, issue % (issue slots busy), warps % (achieved occupancy): time-weighted over the "
        "kernels. The cause is suite_report.cause()'s first rule that holds.\n"
    )
    if prof.get("error"):
        note += f"\nThe profile run reported: {prof['error']}\n"
    if missing:
        note += (
            f"\nNot profiled ({len(missing)}): "
            + ", ".join(f"{c['filter']} {c['label']} {c['dtype']} "
                        f"{'x'.join(map(str, c['shape']))}" for c in missing)
            + ".\n"
        )
    return "\n".join(rows) + "\n" + note


def fmt_ms(v):
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


SHORT = {
    "skipped": "skip",
    "error": "err",
    "unsupported": "n/s",
    "crashed": "crash",
    "timeout": "timeout",
}


def cell(results, impl, c, notes):
    """A table cell: the median, or why there is none, with a footnote number."""
    if impl.startswith("gpix") and impl not in results["impls"]:
        return ""
    if not impl.startswith("gpix") and not maps(results, impl, c["filter"]):
        return "—" if impl in results["impls"] else ""
    r = result(results, impl, c["id"])
    if r is None:
        return "—"
    mark = ""
    if not impl.startswith("gpix") and approx_note(results, impl, c["filter"]):
        mark = " †"
    if not impl.startswith("gpix") and converted(results, impl, c):
        mark += " ‡"
    if r.get("status") == "ok":
        return fmt_ms(r["median_ms"]) + mark
    why = r.get("note", "")
    if r.get("status") == "skipped" and ("predicted" in why or "skipped with" in why):
        key = (r.get("status"), "predicted")
    else:
        # One note for messages that differ only in their numbers (radii, sizes, ids).
        key = (
            r.get("status"),
            re.sub(r"\d+(\.\d+)?", "N", re.sub(r":[^ ]*:[^ ]*:[0-9x]+", "", why))[:160],
        )
    if key not in notes:
        notes[key] = (len(notes) + 1, why)
    return f"{SHORT.get(r.get('status'), r.get('status'))}<sup>{notes[key][0]}</sup>"


def case_name(c):
    return f"`{c['filter']}`" + (f" {c['label']}" if c["label"] else "")


def table(results):
    present = [(i, n) for i, n in GPIX + PEERS if i in results["impls"]]
    profiled = bool((results.get("profile") or {}).get("cases"))
    head = (
        ["case", "shape", "dtype"]
        + [n for _, n in present]
        + ["best peer", "speed-up", "x copy"]
        + (["cause (ncu)"] if profiled else [])
    )
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes = {}
    for c in results["cases"]:
        cells = [case_name(c), "x".join(map(str, c["shape"])), c["dtype"]]
        cells += [cell(results, i, c, notes) for i, _ in present]
        b = best_peer(results, c)
        s = speedup(results, c)
        r = copy_ratio(results, c)
        cells += [
            dict(PEERS)[b[1]] if b else "—",
            (f"**{s:.2f}x**" if s < 1 else f"{s:.2f}x") if s else "—",
            f"{r:.2f}" if r else "—",
        ]
        if profiled:
            cells.append(
                (cause(results, c) or "not profiled") if over_target(results, c) else ""
            )
        rows.append("| " + " | ".join(cells) + " |")
    foot = [
        "",
        "Medians in ms. — : no counterpart in that library (or no result). "
        "† : the peer's function does comparable, not identical, work (see below). "
        "‡ : the peer converted the input to another element type (pyclesperanto: float64 to "
        "float32) and ran on that; shown, never counted as the best peer. "
        "Speed-up: best peer / gpix CUDA; **bold** where gpix is slower. "
        "x copy: gpix CUDA over its own device-to-device copy of the case's first input, "
        "measured in the same process.",
    ]
    for (status, key), (n, example) in sorted(notes.items(), key=lambda kv: kv[1][0]):
        text = (
            "skipped: predicted slower than the per-call limit from the same case on a "
            "smaller shape or window (or that case was skipped)"
            if key == "predicted"
            else f"{status}: {example.replace('|', '/')}"
        )
        foot.append(f"{n}. {text}")
    approx = []
    for impl, name in PEERS:
        for filt, why in sorted(
            results["impls"].get(impl, {}).get("header", {}).get("approx", {}).items()
        ):
            approx.append(f"- {name} `{filt}`: {why}")
    if approx:
        foot += ["", "Approximate counterparts (†):"] + approx
    return "\n".join(rows + foot) + "\n"


def first_call_table(results):
    fc = results.get("first_call") or {}
    cases = results.get("first_call_cases") or []
    if not fc:
        return ""
    names = dict(GPIX + PEERS)
    head = ["implementation", "start -> ready, cold / warm (ms)"] + [
        f"{case_name(c)} cold / warm / 2nd" for c in cases
    ]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def med(v):
        v = [x for x in v if x is not None]
        return sorted(v)[len(v) // 2] if v else None

    def f(v):
        return "—" if v is None else (f"{v:.0f}" if v >= 10 else f"{v:.1f}")

    for impl, runs in fc.items():
        cold = [r for r in runs.get("cold", []) if "error" not in r]
        warm = [r for r in runs.get("warm", []) if "error" not in r]
        if not cold and not warm:
            err = (runs.get("cold") or runs.get("warm") or [{}])[0].get("error", "no result")
            rows.append(f"| {names.get(impl, impl)} | failed: {err[:120].replace('|', '/')} |")
            continue
        cells = [
            names.get(impl, impl),
            f"{f(med([r['start_to_ready_ms'] for r in cold]))} / "
            f"{f(med([r['start_to_ready_ms'] for r in warm]))}",
        ]
        for c in cases:

            def pick(rs, key):
                return med(
                    [next((x.get(key) for x in r["cases"] if x["id"] == c["id"]), None) for r in rs]
                )

            fc_cold, fc_warm, second = (
                pick(cold, "first_ms"),
                pick(warm, "first_ms"),
                pick(warm, "second_ms"),
            )
            cells.append(
                "—"
                if fc_cold is None and fc_warm is None
                else f"{f(fc_cold)} / {f(fc_warm)} / {f(second)}"
            )
        rows.append("| " + " | ".join(cells) + " |")
    return (
        "\n".join(rows) + "\n\nstart -> ready: from the parent's spawn of the process to the "
        "end of its first push (select_device, or the library's import and device, plus a "
        "2048^2 float32 push), the making of the pushed data left out. cold: empty disk caches "
        "(gpix's, the driver's JIT cache, CuPy's, pyclesperanto's in a fresh HOME); warm: the "
        "next two processes with the caches the cold one filled (median); 2nd: the second call "
        "in the same process.\n"
    )


def geomean(v):
    v = [x for x in v if x]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


def summary(results):
    cases = results["cases"]
    lines = []
    sp = {c["id"]: speedup(results, c) for c in cases}
    with_peer = [c for c in cases if sp[c["id"]]]
    g = geomean([sp[c["id"]] for c in with_peer])
    slower = [c for c in with_peer if sp[c["id"]] < 1]
    lines.append(
        f"{len(cases)} cases; {len(with_peer)} with gpix and a peer measured; geometric "
        f"mean speed-up over the best peer {g:.2f}x (target 3x); gpix slower in "
        f"{len(slower)} (target 0)."
        if g
        else f"{len(cases)} cases; no case with gpix and a peer measured."
    )
    for grp in GROUPS:
        v = [sp[c["id"]] for c in with_peer if c["group"] == grp]
        if v:
            lines.append(
                f"- {grp}: {len(v)} cases, geometric mean {geomean(v):.2f}x, "
                f"range {min(v):.2f}-{max(v):.2f}x, slower in {sum(x < 1 for x in v)}"
            )
    if slower:
        worst = sorted(slower, key=lambda c: sp[c["id"]])[:15]
        lines.append(
            "Slowest against the best peer: "
            + ", ".join(
                f"{c['filter']} {c['label']} {c['dtype']} {'x'.join(map(str, c['shape']))} "
                f"{sp[c['id']]:.2f}x ({dict(PEERS)[best_peer(results, c)[1]]})"
                for c in worst
            )
        )
    mb = [c for c in cases if memory_bound(c) and copy_ratio(results, c)]
    over = [c for c in mb if copy_ratio(results, c) > 1.5]
    if mb:
        lines.append(
            f"Memory-bound cases (pointwise, reductions, projections, boxes r <= 3, "
            f"Gaussians sigma <= 3): {len(mb)} measured, {len(over)} over 1.5x the copy "
            f"(target 0)"
            + (
                ": "
                + ", ".join(
                    f"{c['filter']} {c['label']} {c['dtype']} {'x'.join(map(str, c['shape']))} "
                    f"{copy_ratio(results, c):.2f}"
                    for c in over[:15]
                )
                + (f" and {len(over) - 15} more" if len(over) > 15 else "")
                if over
                else ""
            )
            + "."
        )
    for impl, name in GPIX + PEERS:
        err = results["impls"].get(impl, {}).get("error")
        if err:
            lines.append(f"{name} did not run: {err}")
    counts = []
    for impl, name in GPIX + PEERS:
        res = results["impls"].get(impl, {}).get("results", {})
        if res:
            st = {}
            for r in res.values():
                st[r.get("status")] = st.get(r.get("status"), 0) + 1
            counts.append(f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(st.items())))
    if counts:
        lines.append("Results: " + "; ".join(counts) + ".")
    return "\n".join(lines) + "\n"


def markdown(results, command=""):
    m = results.get("meta", {})
    devices = {
        h.get("device")
        for i in results["impls"].values()
        if (h := i.get("header")) and h.get("device")
    }
    versions = [
        h.get("version")
        for i in results["impls"].values()
        if (h := i.get("header")) and h.get("version")
    ]
    head = [
        f"## {m.get('date', '')}, {m.get('gpu', '') or ', '.join(sorted(devices))}, commit "
        f"{m.get('commit', '') or 'unknown'}: performance suite (issue 17)",
        "",
    ]
    if command:
        head += [
            f"Command: `{command}`. "
            + (f"Versions: {', '.join(versions)}. " if versions else "")
            + f"Total {m.get('total_s', 0):.0f} s.",
            "",
        ]
    elif versions:
        head += [f"Versions: {', '.join(versions)}. Total {m.get('total_s', 0):.0f} s.", ""]
    if m.get("quick"):
        head += ["**--quick run (tiny shapes): a smoke test, not a measurement.**", ""]
    out = "\n".join(head) + "\n" + summary(results) + "\n"
    fc = first_call_table(results)
    if fc:
        out += "### First call\n\n" + fc + "\n"
    ct = causes_table(results)
    if ct:
        out += "### Cases over target, with their profile\n\n" + ct + "\n"
    out += "### The grid\n\n" + table(results)
    return out


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    cases = [c for c in results["cases"] if speedup(results, c)]
    if not cases:
        raise ValueError("no case has both a gpix and a peer result: nothing to plot")
    shapes = []
    for c in cases:
        s = "x".join(map(str, c["shape"]))
        if s not in shapes:
            shapes.append(s)
    fig, axes = plt.subplots(
        len(shapes),
        1,
        figsize=(
            max(
                12,
                0.11
                * max(sum(1 for c in cases if "x".join(map(str, c["shape"])) == s) for s in shapes)
                + 2,
            ),
            4.2 * len(shapes),
        ),
        squeeze=False,
    )
    lo = min(speedup(results, c) for c in cases)
    hi = max(speedup(results, c) for c in cases)
    for ax, s in zip(axes[:, 0], shapes):
        sel = [c for c in cases if "x".join(map(str, c["shape"])) == s]
        v = [speedup(results, c) for c in sel]
        colours = [
            COLOURS.get(c["group"], "#999999") if x >= 1 else "#cc3311" for c, x in zip(sel, v)
        ]
        ax.bar(range(len(sel)), v, color=colours, width=0.8, edgecolor="none")
        ax.set_yscale("log")
        ax.set_ylim(min(0.5, lo / 1.5), max(10, hi * 1.5))
        ax.axhline(1, color="black", linewidth=0.8)
        ax.axhline(3, color="black", linewidth=0.6, linestyle="--")
        ax.set_xlim(-0.7, len(sel) - 0.3)
        ax.set_xticks(range(len(sel)))
        ax.set_xticklabels(
            [
                f"{c['filter']} {c['label']} "
                f"{c['dtype'].replace('float', 'f').replace('uint', 'u')}"
                for c in sel
            ],
            rotation=90,
            fontsize=5.5,
        )
        ax.set_ylabel("best peer / gpix")
        ax.set_title(
            f"{s}: geometric mean {geomean(v):.2f}x over {len(v)} cases", fontsize=10, loc="left"
        )
        ax.grid(axis="y", which="both", linewidth=0.3, alpha=0.5)
    m = results.get("meta", {})
    fig.suptitle(
        f"gpix (CUDA) speed-up over the best GPU peer (CuPy, cuCIM, pyclesperanto): "
        f"{m.get('gpu', '') or 'device unknown'}, {m.get('date', '')}, commit "
        f"{m.get('commit', '') or 'unknown'}"
        + ("  [--quick smoke test]" if m.get("quick") else ""),
        fontsize=11,
        y=0.995,
    )
    handles = [Patch(color=COLOURS[g], label=g) for g in GROUPS] + [
        Patch(color="#cc3311", label="gpix slower"),
        plt.Line2D([], [], color="black", linestyle="--", linewidth=0.6, label="3x (target mean)"),
    ]
    fig.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.975),
        ncol=len(handles),
        fontsize=8,
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.955))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--md", help="write the section (summary and tables) here")
    ap.add_argument("--png", help="write the plot here (e.g. docs/performance.png)")
    ap.add_argument("--append", help="append the section to this file (e.g. bench/RESULTS.md)")
    ap.add_argument(
        "--command", default="scripts/gpu-run.sh suite", help="the command the section names"
    )
    o = ap.parse_args(argv)
    results = json.load(open(o.results))
    md = markdown(results, o.command)
    if o.md:
        open(o.md, "w").write(md)
    if o.append:
        with open(o.append, "a") as f:
            f.write("\n" + md)
    if o.png:
        plot(results, o.png)
    print(summary(results), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
