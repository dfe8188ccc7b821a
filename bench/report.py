#!/usr/bin/env python3
"""report.py [--commit C] [--machine M] [--command CMD] FILE.jsonl...: the
tables of BENCHMARKS.md from the JSON lines the benchmarks print
(bench/bench_*.sh, bench/loader_bench.c, bench/first_load_floor.c,
bench/ig_bench.c, bench/torch_ig.py). Prints Markdown: one table per
benchmark that has rows in the input, each headed by the command that
produced it, the commit and the machine. Ratios are peer / ours: above 1,
cubincache is faster. Nothing here is typed in by hand."""
import argparse
import json
import sys


def load(paths):
    rows = []
    for p in paths:
        for line in open(p):
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return rows


def ms(v):
    return "%.2f ms" % v if v >= 1 else "%.3f ms" % v


def us(v):
    return "{:,.1f} us".format(v)


def header(title, args, command):
    print("### %s\n" % title)
    print("Command: `%s`; commit %s; machine: %s.\n" % (command, args.commit, args.machine))


# (key, label, [(our key, what ours is called in the ratio)]): a row with a
# list is a peer, and its ratio is peer / ours for each of ours measured.
CPU_ROWS = [
    ("cubincache_hit_1_target", "`cubincache build` hit, 1 source, 1 target", []),
    ("cubincache_hit_7_targets", "`cubincache build` hit, 1 source, 7 targets", []),
    ("ccache_nvcc_c_hit", "peer: `ccache nvcc -c` hit, 1 target (ccache cannot cache `-cubin`)",
     [("cubincache_hit_1_target", "1 target"), ("cubincache_hit_7_targets", "7 targets")]),
    ("nvcc_cubin_1_target", "peer: raw `nvcc -cubin -arch=sm_90`",
     [("cubincache_hit_1_target", "1 target")]),
    ("process_floor_bin_true", "`/bin/true` (starting any process here)", []),
    ("noop_ninja_20_kernels_x_4_targets", "no-op `ninja`, a C program and 20 kernels x 4 "
     "targets, as README's Meson section writes them (one `cubincache stamp` runs)", []),
    ("noop_ninja_no_kernels", "the same project without its kernels", []),
    ("noop_ninja_always_stale_20_kernels", "the kernels as `build_always_stale` steps instead (20 "
     "`cubincache build` hits)", [("noop_ninja_20_kernels_x_4_targets", "no-op ninja")]),
    ("ccache_noop_ninja_20_kernels_x_4_targets", "peer: the kernels as 80 `build_always_stale` "
     "`ccache nvcc -c` hits", [("noop_ninja_20_kernels_x_4_targets", "no-op ninja")]),
    ("check_1000_cubins", "`cubincache check` of 1000 cubins (250 manifests)", []),
    ("xxhsum_1000_cubins", "peer: `xxhsum -H2` of the same 1000 cubins and 250 manifests "
     "(reading and hashing them, no more)", [("check_1000_cubins", "check")]),
    ("lint_10000_files_500_build_scripts", "`cubincache lint` of 10,000 files: 500 crates' "
     "build.rs, 100 CMakeLists.txt, 100 meson.build (target: under 1 s)", []),
    ("grep_10000_files_env_reads", "peer: `grep -rl` for the reads in the same tree (every file "
     "opened and scanned, no more)", [("lint_10000_files_500_build_scripts", "lint")]),
]


def spread(r):
    q = r.get("cpu_ratio_quartiles")
    return " (middle half of the rounds: %.3fx to %.3fx)" % tuple(q) if q else ""


def cpu_table(rows, args):
    by = {r["bench"]: r for r in rows if "bench" in r and "median_ms" in r and "impl" not in r}
    if not any(key in by for key, _, _ in CPU_ROWS):
        return
    header("Build driver and check (CPU)", args, args.command or "bench/run_cpu.sh")
    print("| what | median | sd | runs | peer / ours |")
    print("|---|---|---|---|---|")
    for key, label, ours in CPU_ROWS:
        r = by.get(key)
        if not r:
            continue
        ratio = ", ".join("%.2fx (%s)" % (r["median_ms"] / by[o]["median_ms"], what)
                          for o, what in ours if o in by)
        print("| %s | %s | %.2f | %d | %s |" % (label, ms(r["median_ms"]), r["stddev_ms"], r["runs"],
                                              ratio))
    cold, plain = by.get("cubincache_build_cold_4_targets"), by.get("nvcc_cold_4_cubins")
    if cold and plain:
        print("\nA cold `cubincache build` of bench/data/launcher_kernels.cu for 4 targets uses %s "
              "of CPU (user + system, median of %d runs; %s wall, the targets in parallel); plain "
              "`nvcc -cubin` making the same 4 cubins one after another uses %s. Run alternately, "
              "the median of the per-round CPU ratios is **%.3fx**%s."
              % (ms(cold["cpu_ms"]), cold["runs"], ms(cold["median_ms"]), ms(plain["cpu_ms"]),
                 cold.get("cpu_ratio_median", cold["cpu_ms"] / plain["cpu_ms"]), spread(cold)))
        j1 = by.get("cubincache_build_cold_4_targets_j1")
        if j1:
            print("With `-j 1` (the targets one after another, as plain nvcc runs them) it uses %s: "
                  "**%.3fx**%s." % (ms(j1["cpu_ms"]), j1["cpu_ratio_median"], spread(j1)))
    k, n = by.get("noop_ninja_20_kernels_x_4_targets"), by.get("noop_ninja_no_kernels")
    if k and n:
        print("\nThe kernels add %.2f ms to a no-op ninja (%s with them, %s without)."
              % (k["median_ms"] - n["median_ms"], ms(k["median_ms"]), ms(n["median_ms"])))
    print()


def table_row(by, key, label, ratio="", cpu=False):
    """One row of a | what | median | (CPU or sd) | runs | ratio | table."""
    r = by.get(key)
    if not r:
        return
    mid = (ms(r["cpu_ms"]) if r.get("cpu_ms") else "") if cpu else "%.2f" % r["stddev_ms"]
    print("| %s | %s | %s | %d | %s |" % (label, ms(r["median_ms"]), mid, r["runs"], ratio))


def launcher_table(rows, args):
    by = {r["bench"]: r for r in rows if "bench" in r and "median_ms" in r and "impl" not in r}
    ours = by.get("launcher_hit_3_archs")
    if not ours:
        return
    header("Compiler launcher (`bench/bench_launcher.sh`)", args, args.command or "bench/run_cpu.sh")
    print("One runtime-API translation unit (`bench/data/launcher_kernels.cu`: 18 templated kernels "
          "and their launches), `-O3 -c` with `-MD`, as CMake runs it. Hits: 3 archs (sm_80, 86, "
          "89); cold and added arch: sm_90 as the fourth. The launcher's cold and added-arch runs "
          "and plain nvcc's alternate, 9 rounds, with the cache emptied of entries and records before "
          "each (the toolchain's identity kept). sccache compiles in its server, so its CPU column "
          "is its client's alone.\n")
    print("| what | median | CPU (user + sys) | runs | ratio |")
    print("|---|---|---|---|---|")

    def row(key, label, ratio=""):
        table_row(by, key, label, ratio, cpu=True)

    def peer(key, base):
        r, o = by.get(key), by.get(base)
        return "%.2fx (peer / ours)" % (r["median_ms"] / o["median_ms"]) if r and o else ""

    row("launcher_hit_3_archs", "`cubincache nvcc` hit")
    row("ccache_launcher_hit_3_archs", "peer: `ccache nvcc` hit",
        peer("ccache_launcher_hit_3_archs", "launcher_hit_3_archs"))
    row("sccache_launcher_hit_3_archs", "peer: `sccache nvcc` hit",
        peer("sccache_launcher_hit_3_archs", "launcher_hit_3_archs"))
    cold, raw = by.get("launcher_cold_4_archs"), by.get("nvcc_cold_4_archs")
    row("nvcc_cold_4_archs", "plain `nvcc`, 4 archs")
    row("launcher_cold_4_archs", "`cubincache nvcc` cold, 4 archs (no entry or record cached)",
        "CPU %.3fx plain nvcc's%s" % (cold.get("cpu_ratio_median", cold["cpu_ms"] / raw["cpu_ms"]),
                                      spread(cold)) if cold and raw else "")
    row("sccache_cold_4_archs", "peer: `sccache nvcc` cold, 4 archs")
    add = by.get("launcher_add_1_arch_to_3")
    row("launcher_add_1_arch_to_3", "`cubincache nvcc`, sm_90 added to the 3 cached",
        "%.2fx its cold 4" % (add["median_ms"] / cold["median_ms"]) if add and cold else "")
    sadd = by.get("sccache_add_1_arch_to_3")
    row("sccache_add_1_arch_to_3", "peer: `sccache nvcc`, sm_90 added to the 3 cached",
        "%.2fx (peer / ours)" % (sadd["median_ms"] / add["median_ms"]) if sadd and add else "")
    print()


def remote_table(rows, args):
    by = {r["bench"]: r for r in rows if "bench" in r and "median_ms" in r and "impl" not in r}
    hit = by.get("cubincache_remote_hit_1_target")
    if not hit:
        return
    header("Remote cache on Redis (`bench/bench_remote.sh`)", args,
           args.command or "bench/run_cpu.sh")
    print("redis-server on loopback, started by the benchmark. A remote hit: the local cache "
          "emptied of entries and records before each run (the toolchain's identity kept), so "
          "every run fetches the direct-mode record, the dependency list and the entry, verifies "
          "the entry and writes all three locally. ccache 4.14 runs with "
          "`CCACHE_REMOTE_STORAGE=redis://...` and `CCACHE_REMOTE_ONLY=true` (every run a remote "
          "hit), on `nvcc -c` (ccache cannot cache `-cubin`).\n")
    print("| what | median | sd | runs | ratio |")
    print("|---|---|---|---|---|")

    def row(key, label, ratio=""):
        table_row(by, key, label, ratio)

    cc = by.get("ccache_remote_hit_1_target")
    row("cubincache_remote_hit_1_target", "`cubincache build` remote hit, 1 source, 1 target",
        "%.2fx ccache's remote hit (target: 0.5x or less)" % (hit["median_ms"] / cc["median_ms"])
        if cc else "")
    row("cubincache_local_hit_1_target", "`cubincache build` local hit, the same build")
    row("ccache_remote_hit_1_target", "peer: `ccache nvcc -c` remote hit")
    cold, comp = by.get("cold_runner_20_kernels_x_4_targets_warm_redis"), \
        by.get("compile_20_kernels_x_4_targets")
    row("compile_20_kernels_x_4_targets", "20 kernels x 4 targets compiled, one build after "
        "another (no cache)")
    row("cold_runner_20_kernels_x_4_targets_warm_redis", "the same on a cold runner from a warm "
        "Redis", "%.2f%% of the compile (target: 5%% or less)"
        % (100.0 * cold["median_ms"] / comp["median_ms"]) if cold and comp else "")
    none = by.get("build_20_kernels_no_remote")
    for key, label in (("build_20_kernels_no_remote", "20 kernels, 1 target, compiled, no remote"),
                       ("build_20_kernels_dead_remote", "the same, the remote dead (nothing "
                        "listens)"),
                       ("build_20_kernels_silent_remote", "the same, the remote silent (accepts, "
                        "never answers)")):
        r = by.get(key)
        extra = ""
        if r and none and key != "build_20_kernels_no_remote":
            extra = "adds %s (median of the per-round ratios: %.3fx; target: 1 s or less)" % (
                ms(none["median_ms"] * (r["wall_ratio_median"] - 1)), r["wall_ratio_median"])
        row(key, label, extra)
    print()


def remote_bounds_table(rows, args):
    by = {r["bench"]: r for r in rows if "bench" in r and "median_ms" in r and "impl" not in r}
    if "cubincache_remote_hit_redis" not in by and "build_1_kernel_no_remote" not in by:
        return
    header("Remote cache bounds, Redis and HTTP (`bench/bench_remote_bounds.sh`)", args,
           args.command or "bench/run_cpu.sh")
    print("redis-server and nginx (WebDAV PUT) on loopback, started by the benchmark. A remote "
          "hit as in the Redis table (the local cache emptied of entries and records before each "
          "run); ccache 4.14 with `CCACHE_REMOTE_STORAGE` on the same servers and "
          "`CCACHE_REMOTE_ONLY=true`, on `nvcc -c`. The bad remotes are "
          "`tests/cli/redis_helpers.py`'s: one trickles a valid reply a byte every 0.5 s, one "
          "announces a 1 GiB value and sends it for ever; a build with each is timed against a "
          "build with no remote, alternately, round after round.\n")
    print("| what | median | sd | runs | ratio |")
    print("|---|---|---|---|---|")

    def row(key, label, ratio=""):
        table_row(by, key, label, ratio)

    for kind, name in (("redis", "Redis"), ("http", "HTTP (nginx)")):
        ours, cc = by.get("cubincache_remote_hit_" + kind), by.get("ccache_remote_hit_" + kind)
        row("cubincache_remote_hit_" + kind, "`cubincache build` remote hit through %s" % name,
            "%.2fx ccache's through %s" % (ours["median_ms"] / cc["median_ms"], name)
            if ours and cc else "")
    for kind, name in (("redis", "Redis"), ("http", "HTTP (nginx)")):
        row("ccache_remote_hit_" + kind, "peer: `ccache nvcc -c` remote hit through %s" % name)
    r, h = by.get("cubincache_remote_hit_redis"), by.get("cubincache_remote_hit_http")
    if r and h:
        print("| (HTTP against Redis, ours) | | | | %.2fx |" % (h["median_ms"] / r["median_ms"]))
    none = by.get("build_1_kernel_no_remote")
    for key, label in (("build_1_kernel_no_remote", "1 kernel, 1 target, compiled, no remote"),
                       ("build_1_kernel_trickle_remote", "the same, the remote trickling a byte "
                        "every 0.5 s (operation-timeout 1000 ms)"),
                       ("build_1_kernel_huge_remote", "the same, the remote sending a 1 GiB "
                        "value (max-value 256 MiB)")):
        x = by.get(key)
        extra = ""
        if x and none and key != "build_1_kernel_no_remote":
            extra = "adds %s (median of the per-round ratios: %.3fx)" % (
                ms(none["median_ms"] * (x["wall_ratio_median"] - 1)), x["wall_ratio_median"])
        row(key, label, extra)
    p = next((r for r in rows if r.get("bench") == "huge_value_peak_rss"), None)
    if p:
        print("\nAgainst the 1 GiB value, peak resident size: the build %.1f MiB (%d ms, nvcc "
              "included), `cache remote verify` %.1f MiB (%d ms); the cap is %d MiB." % (
                  p["build_kb"] / 1024.0, p["build_ms"], p["verify_kb"] / 1024.0, p["verify_ms"],
                  p["cap_kb"] // 1024))
    print()


def accuracy_table(rows, args):
    acc = [r for r in rows if r.get("bench") == "ig_accuracy"]
    if not acc:
        return
    header("IG accuracy (`bench/ig_accuracy.py`)", args, args.command or "scripts/gpu_run.sh OUT")
    print("256 inputs of 784 features in [0, 1), each input's predicted class, Gauss-Legendre 50 "
          "steps, zero baseline; error = relative L2 of an input's attributions against IG by "
          "PyTorch autograd in float64 (same rule), median over the inputs; time = igrun's clock "
          "around the engine call, median of 5 runs.\n")
    print("| model | PyTorch float32 | igrun default | ratio | igrun fast | ratio | igrun fp32 | "
          "ratio | time default | time fast |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in acc:
        t = r["torch_fp32_rel_l2"]
        d = r.get("igrun_default_rel_l2")
        print("| %s | %.2e | %s | %s | %.2e | %.1fx | %.2e | %.1fx | %s | %s |" % (
            r["model"], t, "%.2e" % d if d is not None else "",
            "%.1fx" % (d / t) if d is not None else "", r["igrun_fast_rel_l2"],
            r["igrun_fast_rel_l2"] / t, r["igrun_fp32_rel_l2"], r["igrun_fp32_rel_l2"] / t,
            ms(r["igrun_default_ms"]) if "igrun_default_ms" in r else "", ms(r["igrun_fast_ms"])))
    if all("default_within_2x" in r for r in acc):
        print("\nThe default within 2x of PyTorch float32's error (issue 26): %s." % (
            "every model" if all(r["default_within_2x"] for r in acc) else
            "not on " + ", ".join(r["model"] for r in acc if not r["default_within_2x"])))
    print()


def loader_table(rows, args):
    r = next((x for x in rows if x.get("bench") == "loader_overhead"), None)
    f = next((x for x in rows if x.get("bench") == "first_load_floor"), None)
    if not r:
        return
    header("Loader overhead (`bench/loader_bench.c`, `bench/first_load_floor.c`)", args,
           args.command or "scripts/gpu_run.sh OUT")
    print("The %s image of the project's kernels, %s bytes, on %s; CUDA's default lazy loading "
          "unless said otherwise.\n" % (r["image"], "{:,}".format(r["image_bytes"]), r["gpu"]))
    print("| what | ours | the driver alone | overhead |")
    print("|---|---|---|---|")
    print("| later loads, whole API: `cbc_module_load` + `cbc_module_unload` vs `cuModuleLoadData` "
          "+ `cuModuleUnload`, context current on both sides, median of %d | %s | %s | %+.1f%% |" % (
              r["rounds"], us(r["api_load_unload_ours_us"]), us(r["api_load_unload_raw_us"]),
              r["api_overhead_percent"]))
    print("| later loads, open + select + the memoised verification vs `cuModuleLoadData`, median "
          "of %d | %s | %s | %+.1f%% |" % (r["rounds"], us(r["select_verify_median_us"]),
                                          us(r["cuModuleLoadData_median_us"]), r["overhead_percent"]))
    print("| first load in a process (context current, pages faulted in): open + select + verify "
          "vs the first `cuModuleLoadData` | %s | %s | %+.1f%% |" % (
              us(r["first_select_verify_us"]), us(r["first_cuModuleLoadData_us"]),
              r["first_overhead_percent"]))
    print("| first load of a fresh process, end to end, medians of %d: ours (open, select, verify, "
          "`cuModuleLoadData`) vs `cuModuleLoadData` | %s | %s | %+.1f%% |" % (
              r["fresh_process_runs"], us(r["fresh_first_load_ours_us"]),
              us(r["fresh_first_load_raw_us"]), r["fresh_first_overhead_percent"]))
    print("| the same with `CUDA_MODULE_LOADING=EAGER`, medians of %d | %s | %s | %+.1f%% |" % (
        r["fresh_eager_runs"], us(r["fresh_eager_ours_us"]), us(r["fresh_eager_raw_us"]),
        r["fresh_eager_overhead_percent"]))
    print()
    print("Of the first load in a process: open %s, select %s, verify %s. Warm, the XXH3-128 of "
          "the image takes %s and its ELF label check %s." % (
              us(r["first_open_us"]), us(r["first_select_us"]), us(r["first_verify_us"]),
              us(r["hash_warm_us"]), us(r["label_check_warm_us"])))
    if f:
        keys = [k for k in f if k.endswith("_us")]
        print("`first_load_floor`, medians of %d fresh processes: %s." % (
            f["runs"], ", ".join("%s %s" % (k[:-3].replace("_", " "), us(f[k])) for k in keys)))
    print()


IG_CASES = [("one_input", "one input, from host arrays (CUDA graph replay on our side)"),
            ("batch", "1024 inputs, from host arrays"),
            ("one_input_on_gpu", "one input, arrays on the GPU (graph replay on our side)"),
            ("batch_on_gpu", "1024 inputs, arrays on the GPU")]


def ig_table(rows, args):
    ours = {(r["bench"], r["features"]): r for r in rows if r.get("impl") == "cubincache"}
    torch = {(r["bench"], r["features"]): r for r in rows if r.get("impl") == "pytorch"
             and "median_ms" in r}
    if not ours:
        return
    ver = next((r for r in rows if r.get("impl") == "pytorch" and r.get("bench") == "versions"), None)
    header("Integrated Gradients (`bench/ig_bench.c`, `bench/torch_ig.py`)", args,
           args.command or "scripts/gpu_run.sh OUT")
    print("A tanh MLP F-512-256-1, 50 Gauss-Legendre steps, zero baseline, FP32 (PyTorch with TF32 "
          "off%s). End to end per call, medians; ratio = PyTorch time / ours. Our one-input calls "
          "replay a CUDA graph (taken for a zero or scalar baseline and a repeated shape), so "
          "PyTorch is also timed with its IG captured in a CUDA graph.\n" % (
              ", %s" % ver["torch"] if ver else ""))
    print("| F | case | ours | PyTorch eager | ratio | PyTorch graph | ratio | explanations/s (ours) |")
    print("|---|---|---|---|---|---|---|---|")
    for F in sorted({k[1] for k in ours}):
        for case, label in IG_CASES:
            o = ours.get(("analytic_" + case, F))
            if not o:
                continue
            e = torch.get(("autograd_eager_" + case, F))
            g = torch.get(("autograd_graph_" + case, F))
            cells = []
            for p in (e, g):
                cells += [ms(p["median_ms"]), "%.1fx" % (p["median_ms"] / o["median_ms"])] if p else ["", ""]
            print("| %d | %s | %s | %s | %s | %s | %s | %s |" % (
                F, label, ms(o["median_ms"]), cells[0], cells[1], cells[2], cells[3],
                "{:,.0f}".format(o["explanations_per_s"])))
    fd, naive = ours.get(("fd_batched_one_input", 784)), ours.get(("fd_per_feature_loop", 784))
    if fd and naive:
        print("\nCentral differences, one input, F = 784: batched %s (median of %d) against the "
              "per-feature loop %s (median of %d): %.0fx." % (
                  ms(fd["median_ms"]), fd["runs"], ms(naive["median_ms"]), naive["runs"],
                  naive["median_ms"] / fd["median_ms"]))
    acc = [r for r in torch.values() if "attr_rel_l2_vs_cubincache" in r]
    if acc:
        print("Attributions against PyTorch's, inputs 0 to 7: relative L2 at most %.1e, the worst "
              "single feature %.1e of the largest (torch_ig.py fails beyond 1e-5 and 1e-4)." % (
                  max(r["attr_rel_l2_vs_cubincache"] for r in acc),
                  max(r.get("attr_worst_feature_vs_cubincache", 0) for r in acc)))
    print()


EXPLAIN_CASES = [("one_target", "one target for every input"),
                 ("pred_targets", "each input's predicted class (`--target pred`)"),
                 ("smoothgrad_8", "SmoothGrad of 8 noisy copies, predicted classes")]


# issue 26's targets on the H200: Captum / ours at least this
CAPTUM_TARGET = {"one_target": 3, "pred_targets": 2, "smoothgrad_8": 2}


def explain_table(rows, args):
    ours = {r["bench"]: r for r in rows if r.get("impl") == "cubincache"
            and r.get("bench", "").startswith(("explain_", "layered_"))}
    torch = {r["bench"]: r for r in rows if r.get("impl") == "pytorch" and "median_ms" in r}
    captum = {r["bench"]: r for r in rows if r.get("impl") == "captum" and "median_ms" in r}
    if not ours:
        return
    header("Explaining a classifier as Captum does (`bench/ig_bench.c`, `bench/torch_ig.py`)", args,
           args.command or "scripts/gpu_run.sh OUT")
    print("256 and 4096 inputs of 784 features, 50 Gauss-Legendre steps, zero baseline; "
          "`cbc_ig_explain` on the GPU (the default precision, FP32; `_fast` rows 3xTF32) against "
          "Captum 0.9 itself (`IntegratedGradients`, `NoiseTunnel`, as its users call it) and "
          "against the same computation in PyTorch written by hand (all steps, targets and noisy "
          "copies in one batch, TF32 off, eager). End to end from host arrays, medians; ratio = "
          "theirs / ours (issue 26's bar against Captum: 3x for one target, 2x for the others). "
          "The fused model is 784-512-256-10 tanh; the layered one adds a LayerNorm before each "
          "tanh and a softmax output (the probability of the class), which the engine runs on its "
          "layered path.\n")
    print("| model | inputs | case | ours | Captum | ratio | PyTorch by hand | ratio | "
          "ours / one target |")
    print("|---|---|---|---|---|---|---|---|---|")
    for prefix, model in (("explain_", "fused"), ("layered_", "layered")):
        for suffix, n in (("", 256), ("_4096", 4096), ("_fast", 256)):
            base = ours.get(prefix + "one_target" + suffix)
            for case, label in EXPLAIN_CASES:
                key = prefix + case + suffix
                o, t = ours.get(key), torch.get(prefix + case + suffix.replace("_fast", ""))
                c = captum.get(prefix + case + suffix.replace("_fast", ""))
                if not o:
                    continue
                cr = c["median_ms"] / o["median_ms"] if c else None
                print("| %s%s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                    model, " (fast)" if suffix == "_fast" else "", n, label, ms(o["median_ms"]),
                    ms(c["median_ms"]) if c else "",
                    ("%.1fx%s" % (cr, "" if cr >= CAPTUM_TARGET[case] else " (below %dx)"
                                  % CAPTUM_TARGET[case])) if c else "",
                    ms(t["median_ms"]) if t else "",
                    "%.1fx" % (t["median_ms"] / o["median_ms"]) if t else "",
                    "%.2fx" % (o["median_ms"] / base["median_ms"]) if base else ""))
    for r in rows:
        if r.get("impl") == "captum" and r.get("bench", "").endswith("accuracy_vs_captum_float64"):
            print("\n%s: cubincache's default against Captum float64, inputs 0 to 7: relative L2 "
                  "%.1e (Captum float32: %.1e; issue 26: within 1e-6)." % (
                      "fused" if r["bench"].startswith("explain_") else "layered",
                      r["cubincache_rel_l2"], r["captum_float32_rel_l2"]), end="")
    for r in rows:
        if r.get("bench", "").startswith("igrun_whole_process_"):
            print("\nWhole-process `igrun --target pred` of 10,000 inputs (%s): %s, median of %d "
                  "(issue 26: at most 500 ms)." % (r["bench"].rsplit("_", 1)[1], ms(r["median_ms"]),
                                                   r["runs"]), end="")
    print()
    for prefix, model in (("explain_", "fused"), ("layered_", "layered")):
        sg, one = ours.get(prefix + "smoothgrad_8"), ours.get(prefix + "pred_targets")
        if sg and one:
            print("\nNoiseTunnel on the %s model: 8 samples cost %.2fx one IG of the same batch "
                  "and targets (the target: at most 8x)." % (model, sg["median_ms"] / one["median_ms"]),
                  end="")
    print("\n")


TORCH_ROWS = [
    ("cuobjdump_list_elf_libtorch_cuda", "peer: `cuobjdump --list-elf libtorch_cuda.so`"),
    ("check_arch90_nolibs_libtorch_cuda", "`cubincache check --no-libs --arch 90 libtorch_cuda.so`"),
    ("check_arch90_nolibs_j1_libtorch_cuda", "the same on one thread (`-j 1`)"),
    ("check_arch90_libtorch_cuda", "`cubincache check --arch 90 libtorch_cuda.so`, its libraries "
     "too"),
    ("select_cc90_libtorch_cuda", "`cubincache select --cc 9.0 libtorch_cuda.so`, its libraries "
     "too"),
    ("check_integrity_nolibs_libtorch_cuda", "`cubincache check --no-libs libtorch_cuda.so` "
     "(no --arch: every image inflated and verified)"),
    ("inspect_libtorch_cuda", "`cubincache inspect libtorch_cuda.so` (every image inflated, its "
     "kernels listed)"),
    ("baseline_check_arch90_nolibs_libtorch_cuda", "before: `check --no-libs --arch 90` at {rev}"),
    ("baseline_check_arch90_libtorch_cuda", "before: `check --arch 90` at {rev}, its libraries too"),
]
# issue 25's target for `check --arch 90` of libtorch_cuda.so
TORCH_TARGET_RATIO, TORCH_TARGET_RSS_MB = 0.1, 300


def torch_table(rows, args):
    by = {r["bench"]: r for r in rows if "bench" in r}
    peer = by.get("cuobjdump_list_elf_libtorch_cuda")
    if not peer:
        return
    header("Deploy gate on PyTorch's libraries (`bench/bench_torch.py`)", args,
           args.command or "bench/run_cpu.sh")
    shape = by.get("torch_shape")
    what = ""
    if shape:
        what = " (%s modules with kernels, %s images, %.1f GB once inflated)" % (
            "{:,}".format(shape["modules"]) if shape["modules"] is not None else "?",
            "{:,}".format(shape["images"]), shape["inflated_bytes"] / 1e9)
    print("Data: the PyPI wheel torch %s, its libtorch_cuda.so of %s bytes%s, and the nvidia-* "
          "wheels it pins for its DT_NEEDED libraries. Runs alternate round by round after a "
          "warm-up, each waiting for a 1-minute load under 0.5 (the highest seen: %.2f). Peak RSS "
          "is each process's own (wait4).\n" % (
              shape["torch"] if shape else "?", "{:,}".format(peer["size_bytes"]), what,
              peer["load_max"]))
    print("| what | median | min to max | CPU | peak RSS | runs | exit | time / cuobjdump's |")
    print("|---|---|---|---|---|---|---|---|")
    for key, label in TORCH_ROWS:
        r = by.get(key)
        if not r:
            continue
        ratio = "" if r is peer else "%.3fx" % (r["median_ms"] / peer["median_ms"])
        print("| %s | %s | %s to %s | %s | %.0f MB | %d | %d | %s |" % (
            label.format(rev=r.get("baseline_rev", "an earlier commit")), ms(r["median_ms"]),
            ms(r["min_ms"]), ms(r["max_ms"]), ms(r["cpu_ms"]), r["max_rss_mb"], r["runs"], r["exit"],
            ratio))
    met = []
    for key, what in (("check_arch90_nolibs_libtorch_cuda", "the file alone"),
                      ("check_arch90_libtorch_cuda", "with its libraries")):
        r = by.get(key)
        if r:
            ratio = r["median_ms"] / peer["median_ms"]
            ok = ratio <= TORCH_TARGET_RATIO and r["max_rss_mb"] < TORCH_TARGET_RSS_MB
            met.append("%s, %.3fx and %.0f MB: %s" % (what, ratio, r["max_rss_mb"],
                                                     "met" if ok else "not met"))
    if met:
        print("\nThe target of `check --arch 90 libtorch_cuda.so` (issue 25): at most %.1fx "
              "cuobjdump's time and under %d MB resident: %s." % (
                  TORCH_TARGET_RATIO, TORCH_TARGET_RSS_MB, "; ".join(met)))
    arch = by.get("torch_arch_list")
    verdicts = [r for r in rows if r.get("bench") == "torch_verdict"]
    if verdicts:
        al = arch["arch_list"] if arch else []
        print("\nWhat `check` says of the wheel's libtorch_cuda.so for every compute capability, "
              "next to its arch list (%s: the CUDA_ARCH_FLAGS string libtorch_python.so carries, "
              "which `torch.cuda.get_arch_list()` splits).\n" % (" ".join(al) or "not found"))
        print("| GPU | sm_XY in the arch list | `check --no-libs --arch X.Y` | `check --arch X.Y`, "
              "its libraries too |")
        print("|---|---|---|---|")
        for r in verdicts:
            sm = "sm_" + r["cc"].replace(".", "")
            short = lambda v: " ".join(v.split()[:1]) if v else "?"
            print("| %s | %s | %s (exit %d) | %s (exit %d) |" % (
                r["cc"], "yes" if sm in al else "no", short(r["verdict"]), r["exit"],
                short(r["verdict_libs"]), r["exit_libs"]))
    libs = [r for r in rows if r.get("bench") == "torch_lib_verdict"]
    if libs:
        ccs = list(libs[0]["verdicts"])
        print("\nEach library of the wheels with GPU code, alone, by the dispatch rule (`check "
              "--no-libs --rule dispatch --arch X.Y LIB`): R runs, J runs through PTX JIT, P "
              "partial and accepted, - will not run.\n")
        print("| library | " + " | ".join(ccs) + " |")
        print("|---|" + "---|" * len(ccs))
        abbrev = {"RUNS": "R", "RUNS-JIT": "J", "RUNS-LINKED": "L", "PARTIAL": "P",
                  "WILL-NOT-RUN": "-"}
        for r in libs:
            print("| %s | %s |" % (r["library"], " | ".join(abbrev.get(r["verdicts"][c], "?")
                                                         for c in ccs)))
    print()


FLEET_ROWS = [
    ("fleet_bundle", "`cubincache build` (bundle mode)"),
    ("fleet_cmake_launcher", "`cubincache nvcc` (CMake launcher), builder 2 in a fresh build dir"),
    ("fleet_ccache", "peer: ccache 4.14, no base_dir"),
    ("fleet_ccache_basedir", "peer: ccache 4.14 with base_dir"),
    ("fleet_sccache", "peer: sccache 0.16 (SCCACHE_BASEDIRS)"),
]


def fleet_table(rows, args):
    by = {r["bench"]: r for r in rows if str(r.get("bench", "")).startswith("fleet_")}
    if not by:
        return
    header("A fleet sharing one Redis (`bench/bench_fleet.sh`)", args,
           args.command or "LLMC_DIR=DIR bench/bench_fleet.sh")
    print("Eight kernels of karpathy/llm.c's dev/cuda x four archs (80, 86, 89, 90) = 32 units. "
          "Builder 1 compiles them cold in one checkout; builder 2 builds them in another "
          "checkout path, from another working directory, with an empty local cache and the warm "
          "Redis. Compiles are runs of cicc and ptxas, counted by wrappers in a CUDA tree of "
          "links, the same for every tool. Time ratio = builder 2 / builder 1.\n")
    print("| tool | builder 2 compiles (cicc, ptxas) of 32 | builder 1 cold | builder 2 | ratio |")
    print("|---|---|---|---|---|")
    for key, label in FLEET_ROWS:
        r = by.get(key)
        if not r:
            continue
        print("| %s | %d, %d | %.2f s | %.3f s | %.4fx |" % (
            label, r["cicc"], r["ptxas"], r["builder1_s"], r["builder2_s"],
            r["builder2_s"] / r["builder1_s"] if r["builder1_s"] else float("nan")))
    e = by.get("fleet_eight_cold")
    if e:
        print("\nEight cold builders at once, each its own checkout and empty local cache, one "
              "Redis, three kernels x four archs = %d units: %d cicc and %d ptxas runs together, "
              "%.2f compiles per unit (target: 1.5 or less), %.1f s wall." % (
                  e["units"], e["cicc"], e["ptxas"], max(e["cicc"], e["ptxas"]) / e["units"],
                  e["seconds"]))
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--commit", default="?")
    ap.add_argument("--machine", default="?")
    ap.add_argument("--command", default=None)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    rows = load(args.files)
    if not rows:
        print("report.py: no benchmark lines in %s" % ", ".join(args.files), file=sys.stderr)
        return 1
    cpu_table(rows, args)
    launcher_table(rows, args)
    remote_table(rows, args)
    torch_table(rows, args)
    remote_bounds_table(rows, args)
    fleet_table(rows, args)
    loader_table(rows, args)
    ig_table(rows, args)
    explain_table(rows, args)
    accuracy_table(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
