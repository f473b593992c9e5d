"""Which kernel each system of bench/compare.py actually ran, read back from the system itself, and
the share of this CPU's arithmetic peak that each system reached (issue 48 item 4).

Read-back, one untimed forward pass of the (a) batch per system, in its own process:
  mcinfer-*      `ONEDNN_VERBOSE=1 mcinfer bench MODEL --iters 1 --json`: the device line's
                 "GEMMs: ... ours (avx2), others oneDNN up to ..." (which GEMMs are mcinfer's own
                 kernels) and oneDNN's verbose implementation names of whatever primitives the
                 library executed (bench/onednn_isa.py's parser).
  torch*         ATen's CPU capability (torch.backends.cpu.get_cpu_capability()), MKL_VERBOSE=1 (the
                 BLAS calls nn.Linear and SDPA make, with oneMKL's own banner of the code path it
                 dispatched to) and ONEDNN_VERBOSE=1 (the ops PyTorch hands to oneDNN).
  ort*           ONNX Runtime's profiler (SessionOptions.enable_profiling): the kernel (contrib op)
                 each node ran and its share of the time. ONNX Runtime exposes no more: MLAS picks
                 its GEMM kernel by CPUID inside the library (the wheel is stripped, no symbol
                 names), and no API, log line or environment variable names it; the hardware
                 device API reports only the CPU vendor.
  openvino*      the compiled model's runtime graph: each node's rt_info "primitiveType" (e.g.
                 brgemm_avx2_f32, gemm_mlas_f32, jit_gemm_i8), counted for the compute layers, and
                 PERF_COUNT's time per primitive type.
  ct2*           CT2_VERBOSE=1: CTranslate2's CPU ISA and GEMM backend lines.

Peak: bench/isa_peak_avx2 (vfmadd231ps, vpmaddwd, vpmaddubsw on 12 independent ymm chains), once
on one core and once on every core at the same time, at the start and at the end of the
comparison; the higher of the two is the ceiling. A system's share of the peak is the time its
model's operations would take at that peak ÷ its measured time: the GEMM operations at the peak of
the system's GEMM instruction (int8: vpmaddwd, mcinfer's, and vpmaddubsw, the one ONNX Runtime's
and oneDNN's AVX2 u8·s8 kernels use), the rest (attention, which runs in f32 everywhere) at the FMA
peak. The operations are mcinfer's own count for the model at the (a) shape (`mcinfer bench`'s
gflop_per_batch: attention only over the query-key pairs a mask and window leave; the GEMM part
from its GEMM-alone probe), the same for every system.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import onednn_isa

# bench/isa_peak_avx2's fields: (its JSON key, the label shown)
PEAKS = {"fma": ("fp32_fma_ymm_gflops", "vfmadd231ps"), "vpmaddwd": ("s16_vpmaddwd_ymm_gops", "vpmaddwd"),
         "vpmaddubsw": ("u8s8_vpmaddubsw_ymm_gops", "vpmaddubsw")}
# the peak each precision's GEMMs are held to (int8: both instructions, each shown)
GEMM_PEAKS = {"fp32": ["fma"], "int8": ["vpmaddwd", "vpmaddubsw"], "bf16": []}
# OpenVINO layer types that hold a model's arithmetic (Subgraph: its fused "snippets" kernels)
OV_COMPUTE = ("FullyConnected", "MatMul", "Convolution", "ScaledDotProductAttention", "Subgraph")


def isa_peak_binary(mcinfer: Path) -> Path:
    """bench/isa_peak_avx2 as built next to the mcinfer binary (BUILD/tools/mcinfer/mcinfer)."""
    return mcinfer.resolve().parents[2] / "src" / "backends" / "cpu" / "isa_peak_avx2"


def _run_pinned(binary: Path, cpus: list) -> list:
    """One copy of binary per CPU, all at once, each pinned to its CPU right after it starts (it
    spends its first microseconds in the loader): their JSON lines."""
    procs = []
    for cpu in cpus:
        procs.append(subprocess.Popen([str(binary)], stdout=subprocess.PIPE, text=True))
        os.sched_setaffinity(procs[-1].pid, {cpu})
    return [json.loads(p.communicate(timeout=300)[0]) for p in procs]


def measure_peak(binary: Path, cores: int) -> dict:
    """{"one": {field: GOP/s}, "all": {field: summed over `cores` copies run at once}} or
    {"error": why}. Each copy is pinned to its own CPU."""
    if not os.access(binary, os.X_OK):
        return {"error": f"{binary} is not built (ninja -C BUILD isa_peak_avx2)"}
    cpus = sorted(os.sched_getaffinity(0))[:cores]
    try:
        one = _run_pinned(binary, cpus[:1])[0]
        outs = _run_pinned(binary, cpus)
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        return {"error": f"{binary}: {e}"}
    if any(v is None for v in one.values()):
        return {"error": f"{binary}: this CPU has no AVX2 and FMA"}
    total = {k: sum(o[k] for o in outs) for k in one}
    return {"one": one, "all": total, "copies": len(cpus)}


def best_peak(runs: list) -> dict:
    """The ceiling over several measure_peak results (the highest of each field), with every run kept."""
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"] if runs else "not measured", "runs": runs}
    out = {"runs": runs, "copies": ok[0]["copies"]}
    for scope in ("one", "all"):
        out[scope] = {k: max(r[scope][k] for r in ok) for k in ok[0][scope]}
    return out


def peak_text(peak: dict) -> str:
    if "error" in peak:
        return f"not measured: {peak['error']}"
    runs = [r for r in peak["runs"] if "error" not in r]

    def fields(scope: str) -> str:
        return ", ".join(f"{label} {peak[scope][key]:.1f} (" + " / ".join(f"{r[scope][key]:.1f}" for r in runs) + ")"
                         for key, label in PEAKS.values())

    return (f"one core: {fields('one')}; all {peak['copies']} cores at once: {fields('all')} "
            f"(GFLOP/s for vfmadd231ps, GOP/s for the int8 ones; the ceiling is the higher of "
            f"{len(runs)} measurements, shown in brackets: start / end of this run)")


# ---------------------------------------------------------------- parsing what the systems print

def mkl_verbose(text: str) -> dict:
    """{"banner": oneMKL's first line, "calls": {routine: [count, seconds]}} from MKL_VERBOSE=1."""
    banner, calls = "", {}
    for line in text.splitlines():
        if not line.startswith("MKL_VERBOSE"):
            continue
        rest = line[len("MKL_VERBOSE"):].strip()
        m = re.match(r"([A-Z0-9_]+)\(.*\)\s+([0-9.]+)(ns|us|ms|s)\b", rest)
        if m:
            scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(3)]
            entry = calls.setdefault(m.group(1), [0, 0.0])
            entry[0] += 1
            entry[1] += float(m.group(2)) * scale
        elif not banner:
            banner = rest
    return {"banner": banner, "calls": calls}


def onednn_summary(text: str) -> str:
    """oneDNN's ISA line and its executed primitives by implementation, or "" when none ran."""
    table = onednn_isa.parse_verbose(text)
    isa = next((l.split("isa:", 1)[1] for l in text.splitlines() if "info,cpu,isa:" in l), "")
    if not table:
        return f"oneDNN ({isa}) executed no primitive" if isa else ""
    rows = sorted(table.items(), key=lambda kv: -kv[1][0])
    shown = ", ".join(f"{prim} `{impl}`" + ("" if src == "?" else f" {src}") + f" ×{n}"
                      for (prim, impl, src), (n, _) in rows[:6])
    more = f" (+{len(rows) - 6} more)" if len(rows) > 6 else ""
    return f"oneDNN ({isa or '?'}): {shown}{more}"


def ct2_verbose(text: str) -> str:
    keep = [l.split("[info]", 1)[1].strip() for l in text.splitlines() if "[ctranslate2]" in l and "[info]" in l]
    return "; ".join(dict.fromkeys(keep)) or "CT2_VERBOSE printed nothing"


def shares(times: dict, top: int = 5) -> str:
    """'a 61%, b 30%, ...' from {name: seconds}."""
    total = sum(times.values())
    if total <= 0:
        return "—"
    rows = sorted(times.items(), key=lambda kv: -kv[1])
    out = ", ".join(f"{name} {100 * t / total:.0f}%" for name, t in rows[:top])
    return out + (f", {len(rows) - top} more" if len(rows) > top else "")


def peer_summary(system: str, info: dict, text: str) -> str:
    """One line: what the peer's own read-back (compare_peers.py `kernels`) and its verbose
    logs (`text`: the process's stdout and stderr) say ran."""
    parts = []
    if "torch_capability" in info:
        parts.append(f"ATen CPU capability {info['torch_capability']}")
        mkl = mkl_verbose(text)
        if mkl["calls"]:
            calls = ", ".join(f"{r} ×{n} ({t * 1e3:.0f} ms)" for r, (n, t) in
                              sorted(mkl["calls"].items(), key=lambda kv: -kv[1][1]))
            parts.append(f"MKL_VERBOSE: {calls}; banner `{mkl['banner']}`")
        elif mkl["banner"]:
            parts.append(f"MKL_VERBOSE: no calls; banner `{mkl['banner']}`")
        dnn = onednn_summary(text)
        if dnn:
            parts.append(dnn)
        if info.get("attention"):
            parts.append(f"attention {info['attention']}")
    if "ort_kernels" in info:
        parts.append(f"ORT profiler, time by kernel ({info['ort_provider']}): {shares(info['ort_kernels'])}")
        parts.append(f"MLAS kernel: not exposed (hardware device: {info.get('ort_device', '?')})")
    if "ov_primitives" in info:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(info["ov_primitives"].items(), key=lambda kv: -kv[1]))
        parts.append(f"runtime model primitiveType (compute layers): {counts}")
        parts.append(f"PERF_COUNT time by primitive: {shares(info['ov_time'])}")
        if info.get("ov_capabilities"):
            parts.append(f"OPTIMIZATION_CAPABILITIES {info['ov_capabilities']}")
    if "ct2_compute_type" in info:
        parts.append(f"compute_type {info['ct2_compute_type']}; {ct2_verbose(text)}")
    return "; ".join(parts) or "nothing read back"


def mcinfer_readback(mcinfer: Path, model_dir: Path, precision: str, batch: int, seq: int,
                     extra: list, timeout: float | None) -> dict:
    """One untimed `mcinfer bench` at the (a) shape with ONEDNN_VERBOSE=1: {"summary", "device",
    "flops_per_seq", "gemm_flops_per_seq"} or {"error"}."""
    cmd = [str(mcinfer), "bench", str(model_dir), "--batch", str(batch), "--seq", str(seq), "--threads", "1",
           "--replicas", "1", "--warmup", "0", "--iters", "1", "--precision", precision, "--json"] + extra
    env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": "timed out", "cmd": cmd}
    info = next((json.loads(l) for l in reversed(res.stdout.splitlines()) if l.startswith("{")), None)
    if res.returncode != 0 or info is None:
        return {"error": (res.stderr or res.stdout).strip()[-300:], "cmd": cmd}
    device = info.get("device", "?")
    dnn = onednn_summary(res.stdout + res.stderr) or "ONEDNN_VERBOSE=1: oneDNN executed no primitive"
    out = {"cmd": cmd, "device": device, "flops_per_seq": info["gflop_per_batch"] * 1e9 / batch,
           "precision_reason": info.get("precision_reason", "?"), "summary": f"device `{device}`; {dnn}"}
    # The GEMMs' share of those operations: bench's GEMM-alone probe runs the model's layer GEMMs
    # (its efficiency = their operations over the model's time ÷ the probe's speed).
    eff, gemm = info.get("efficiency_vs_gemm"), info.get("gemm_gflops")
    if eff and gemm:
        batches = info["iters"] * info["replicas"]
        out["gemm_flops_per_seq"] = eff * gemm * 1e9 * info["seconds"] / batches / batch
    return out


def share_of_peak(seq_per_s: float | None, precision: str, flops: dict | None, peak: dict,
                  scope: str) -> dict:
    """{peak name: share} for a system that ran seq_per_s sequences a second: the time its
    operations take at the peak (GEMMs at the precision's GEMM instruction, the rest at FMA) ÷ the
    time it took. scope: "all" (every core) or "one"."""
    if not seq_per_s or not flops or "error" in peak:
        return {}
    p = peak[scope]
    total = flops["flops_per_seq"]
    gemm = min(flops.get("gemm_flops_per_seq", total), total)
    fma = p[PEAKS["fma"][0]] * 1e9
    out = {}
    for name in GEMM_PEAKS.get(precision, []):
        ideal = gemm / (p[PEAKS[name][0]] * 1e9) + (total - gemm) / fma
        out[name] = ideal * seq_per_s
    return out


def share_text(s: dict) -> str:
    return ", ".join(f"{100 * v:.0f}% of {PEAKS[k][1]}" for k, v in s.items()) or "—"
