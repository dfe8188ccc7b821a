#!/usr/bin/env bash
# bench_build_cold.sh: the CPU a cold `cubincache build` costs against plain
# nvcc making the same cubins: bench/data/launcher_kernels.cu (18 templated
# kernels) for sm_75, 80, 86 and 90, -O3. Plain: the four `nvcc -cubin`
# one after the other, no dependency file. Ours: the entries, records and
# the bundle removed before each run (the toolchain's identity kept, as on
# any machine that has built once), so every target compiles; its
# dependencies come from the preprocessing nvcc runs anyway. CPU (user +
# system) is what compares: ours compiles the targets in parallel.
. "$(dirname "$0")/bench_lib.sh"
mkdir -p "$B/src"
cp "$(dirname "$0")/data/launcher_kernels.cu" "$B/src/lk.cu"
cd "$B/src"
cat > "$B/plain.sh" <<SH
for a in 75 80 86 90; do "$NVCC_REAL" -cubin -gencode arch=compute_\$a,code=sm_\$a -O3 lk.cu -o "$B/p\$a.cubin"; done
SH
"$CUBINCACHE" build -q -a 75 -o "$B/warm" lk.cu -- -O3 # the toolchain's identity, cached
# alternately, round after round, so that drift on the machine falls on
# both; CPU of each run from getrusage of its children
python3 - "$B" "$CUBINCACHE" <<'PY'
import json, resource, shutil, statistics, subprocess, sys, time
b, cbc = sys.argv[1], sys.argv[2]
def run(cmd):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (t1 - t0) * 1e3, (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e3
ours_cmd = [cbc, "build", "-q", "-a", "75,80,86,90", "-o", b + "/out", "lk.cu", "--", "-O3"]
res = {"plain": [], "ours": []}
for i in range(9):
    for d in ("objects", "direct", "deps"):
        shutil.rmtree(b + "/cache/v1/" + d, ignore_errors=True)
    shutil.rmtree(b + "/out", ignore_errors=True)
    res["ours"].append(run(ours_cmd))
    res["plain"].append(run(["bash", b + "/plain.sh"]))
ratios = [o[1] / p[1] for o, p in zip(res["ours"], res["plain"])]
for name, key in (("nvcc_cold_4_cubins", "plain"), ("cubincache_build_cold_4_targets", "ours")):
    w = [x[0] for x in res[key]]
    c = [x[1] for x in res[key]]
    row = {"bench": name, "median_ms": statistics.median(w), "mean_ms": statistics.mean(w),
           "stddev_ms": statistics.stdev(w), "runs": len(w), "cpu_ms": statistics.median(c)}
    if key == "ours":
        row["cpu_ratio_median"] = statistics.median(ratios)
    print(json.dumps(row))
PY
