#!/usr/bin/env python3
"""Self-test of bench/compare_kernels.py and the report's kernel table: parsing of the systems'
verbose logs and read-backs (lines as the peers print them, copied from real runs on an AVX2
EPYC), the peak-share arithmetic, and whose GEMM the report names. Needs no peer, no model and no
mcinfer binary:

    .venv-legacy/bin/python bench/compare_kernels_test.py      (or: python -m pytest bench/compare_kernels_test.py)
"""

import sys
import types
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare_kernels as ck  # noqa: E402
import compare_report as report  # noqa: E402

TORCH_LOG = """MKL_VERBOSE oneMKL 2024.0 Update 2 Product build 20240605 for Intel(R) 64 architecture Intel(R) \
Architecture processors, Lnx 2.45GHz lp64 gnu_thread
MKL_VERBOSE SGEMM(T,N,384,128,384,0x7ffed99a9c60,0x7f18cbb05a98,384,0x55fe710f0880,384,0x7ffed99a9c80,\
0x55fe71090800,384) 385.70us CNR:OFF Dyn:0 FastMM:1 TID:0  NThr:2
MKL_VERBOSE SGEMM(N,N,32,32,32,0x7f18d123cb90,0x55fe710b4980,384,0x55fe70c5a780,32,0x7f18d123cbb0,\
0x55fe70c5b880,32) 7.93us CNR:OFF Dyn:0 FastMM:1 TID:1  NThr:2
MKL_VERBOSE SGEMM(T,N,384,128,384,0x7ffed99a9c60,0x7f18cb3b0698,384,0x55fe71150900,384,0x7ffed99a9c80,\
0x55fe71030780,384) 10.36ms CNR:OFF Dyn:0 FastMM:1 TID:0  NThr:2
onednn_verbose,info,oneDNN v3.5.3 (commit 66f0cb9eb66affd2da3bf5f8d897376f04aae6af)
onednn_verbose,info,cpu,isa:Intel AVX2
onednn_verbose,primitive,exec,cpu,eltwise,jit:avx2,forward_training,data_f32::blocked:abc::f0 \
diff_undef::undef:::,attr-scratchpad:user,alg:eltwise_gelu_erf alpha:0 beta:0,4x32x1536,7.94702
{"system": "torch", "torch_capability": "AVX2", "attention": "sdpa"}
"""

DEVICE = "cpu (avx2 kernels, GEMMs: f32, bf16, s8 ours (avx2), others oneDNN up to avx2)"
PEAK = {"one": {"fp32_fma_ymm_gflops": 100.0, "s16_vpmaddwd_ymm_gops": 200.0, "u8s8_vpmaddubsw_ymm_gops": 400.0},
        "all": {"fp32_fma_ymm_gflops": 200.0, "s16_vpmaddwd_ymm_gops": 400.0, "u8s8_vpmaddubsw_ymm_gops": 800.0},
        "copies": 2, "runs": []}
FLOPS = {"flops_per_seq": 3e9, "gemm_flops_per_seq": 2e9}  # 2 GFLOP of GEMMs, 1 of attention


class Parsing(unittest.TestCase):
    def test_mkl_verbose_counts_calls_and_keeps_the_banner(self):
        mkl = ck.mkl_verbose(TORCH_LOG)
        self.assertIn("Intel(R) Architecture processors", mkl["banner"])
        n, seconds = mkl["calls"]["SGEMM"]
        self.assertEqual(n, 3)
        self.assertAlmostEqual(seconds, 385.70e-6 + 7.93e-6 + 10.36e-3)

    def test_onednn_summary_names_isa_and_implementation(self):
        s = ck.onednn_summary(TORCH_LOG)
        self.assertIn("Intel AVX2", s)
        self.assertIn("eltwise `jit:avx2` ×1", s)
        self.assertEqual(ck.onednn_summary("no verbose here"), "")

    def test_torch_summary(self):
        s = ck.peer_summary("torch", {"torch_capability": "AVX2", "attention": "sdpa"}, TORCH_LOG)
        self.assertTrue(s.startswith("ATen CPU capability AVX2; MKL_VERBOSE: SGEMM ×3"), s)
        self.assertIn("attention sdpa", s)

    def test_ort_summary_says_mlas_is_not_exposed(self):
        info = {"ort_kernels": {"DynamicQuantizeMatMul": 3.0, "QAttention": 1.0}, "ort_provider": "CPUExecutionProvider",
                "ort_device": "CPU vendor AMD (id 0x1022)"}
        s = ck.peer_summary("ort-int8", info, "")
        self.assertIn("DynamicQuantizeMatMul 75%, QAttention 25%", s)
        self.assertIn("MLAS kernel: not exposed", s)

    def test_openvino_summary_lists_primitive_types(self):
        info = {"ov_primitives": {"FullyConnected brgemm_avx2_f32": 18, "FullyConnected gemm_mlas_f32": 18},
                "ov_time": {"FullyConnected brgemm_avx2_f32": 0.5, "FullyConnected gemm_mlas_f32": 0.5},
                "ov_capabilities": "FP32 INT8 BIN EXPORT_IMPORT"}
        s = ck.peer_summary("openvino", info, "")
        self.assertIn("FullyConnected brgemm_avx2_f32 18", s)
        self.assertIn("PERF_COUNT time by primitive: FullyConnected brgemm_avx2_f32 50%", s)

    def test_ct2_verbose(self):
        log = "[2026-12-07 06:40:00.000] [ctranslate2] [thread 1] [info] CPU: AuthenticAMD (AVX2=true)\n"
        self.assertEqual(ck.ct2_verbose(log), "CPU: AuthenticAMD (AVX2=true)")


class PeakShare(unittest.TestCase):

    def test_fp32_is_all_operations_at_the_fma_peak(self):
        # 3 GFLOP at 200 GFLOP/s = 15 ms a sequence; 40 seq/s take 25 ms each: 60%
        s = ck.share_of_peak(40.0, "fp32", FLOPS, PEAK, "all")
        self.assertEqual(list(s), ["fma"])
        self.assertAlmostEqual(s["fma"], 0.6)

    def test_int8_gemms_at_the_int8_peak_the_rest_at_fma(self):
        s = ck.share_of_peak(40.0, "int8", FLOPS, PEAK, "one")
        # one core: 2e9 / 200e9 + 1e9 / 100e9 = 20 ms; x 40/s = 0.8 (vpmaddwd); 2e9/400e9 + 10 ms = 15 ms: 0.6
        self.assertAlmostEqual(s["vpmaddwd"], 0.8)
        self.assertAlmostEqual(s["vpmaddubsw"], 0.6)
        self.assertEqual(ck.share_text(s), "80% of vpmaddwd, 60% of vpmaddubsw")

    def test_nothing_without_a_measurement(self):
        self.assertEqual(ck.share_of_peak(None, "fp32", FLOPS, PEAK, "all"), {})
        self.assertEqual(ck.share_of_peak(40.0, "fp32", None, PEAK, "all"), {})
        self.assertEqual(ck.share_of_peak(40.0, "fp32", FLOPS, {"error": "not built"}, "all"), {})
        self.assertEqual(ck.share_text({}), "—")

    def test_best_peak_keeps_the_higher_of_each_field(self):
        low = {"one": dict(PEAK["one"], fp32_fma_ymm_gflops=70.0), "all": PEAK["all"], "copies": 2}
        best = ck.best_peak([low, {"one": PEAK["one"], "all": dict(PEAK["all"], s16_vpmaddwd_ymm_gops=300.0),
                                   "copies": 2}])
        self.assertEqual(best["one"]["fp32_fma_ymm_gflops"], 100.0)
        self.assertEqual(best["all"]["s16_vpmaddwd_ymm_gops"], 400.0)
        self.assertIn("70.0", ck.peak_text(best))
        self.assertIn("error", ck.best_peak([{"error": "not built"}]))


class Report(unittest.TestCase):
    def test_gemm_owner_follows_the_device_line(self):
        self.assertEqual(report.gemm_owner(DEVICE, "fp32"), "mcinfer's own AVX2")
        self.assertEqual(report.gemm_owner(DEVICE, "int8"), "mcinfer's own AVX2")
        self.assertEqual(report.gemm_owner("cpu (avx512 kernels, oneDNN GEMM up to avx512_core_amx)", "bf16"),
                         "oneDNN")
        self.assertEqual(report.gemm_owner("cpu (avx2 kernels, GEMMs: s8 ours (avx2), others oneDNN up to avx2)",
                                           "fp32"), "oneDNN")
        self.assertEqual(report.gemm_owner(None, "fp32"), "the library's")

    def test_kernels_table_has_the_read_back_and_the_share(self):
        a = types.SimpleNamespace(batch=32, seq=128, cores=2, systems=["mcinfer-fp32", "ort-int8", "torch"])
        sa = {("mcinfer-fp32", 2): {"seq_per_s": 40.0}, ("ort-int8", 2): {"seq_per_s": 40.0}}
        kern = {"_flops": FLOPS, "mcinfer-fp32": {"summary": f"device `{DEVICE}`"},
                "ort-int8": {"summary": "ORT profiler | kernels"}, "torch": {"error": "read-back failed: exit 1"}}
        term, md = report.kernels_table(a, "minilm", sa, kern, PEAK)
        rows = {line.split(" | ")[0]: line for line in md if line.startswith("| ") and " | " in line}
        self.assertIn("60% of vfmadd231ps", rows["| mcinfer-fp32"])
        self.assertIn("GEMMs: f32, bf16, s8 ours (avx2)", rows["| mcinfer-fp32"])
        # 2e9/400e9 + 1e9/200e9 = 10 ms x 40/s = 40%; 2e9/800e9 + 5 ms = 7.5 ms: 30%
        self.assertIn("40% of vpmaddwd, 30% of vpmaddubsw", rows["| ort-int8"])
        self.assertIn("ORT profiler / kernels", rows["| ort-int8"])  # a | in a cell would split it
        self.assertIn("read-back failed", rows["| torch"])
        self.assertTrue(any("3.00 GFLOP per sequence" in line for line in term))


if __name__ == "__main__":
    unittest.main()
