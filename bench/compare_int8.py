"""The int8 peers of bench/compare.py: their conversions, cached in bench/work/compare/<model>/
next to the others, and how they are described. bench/compare_peers.py runs them with its own
runners (ONNX Runtime, OpenVINO, CTranslate2), pointed at the quantized models:

  ort-int8       ONNX Runtime dynamic quantization of the fused graph the `ort` system runs
                 (onnx/model_ort.onnx): quantize_dynamic(per_channel=True, weight_type=QInt8,
                 extra_options={"DefaultTensorType": FLOAT}; without that option it fails on ORT's
                 fused contrib ops). Weights int8 per output channel, activations quantized per tensor
                 at run time; the quantized ops of the saved graph are counted (onnx_int8/quant.json)
                 and a graph without any fails the system. One session, intra-op threads = cores.
  openvino-int8  NNCF post-training quantization of the fp32 IR the workload's openvino runs
                 (ov_fp32_ir: ov/model.xml, or for workload (a) ov_torch/model.xml where bench/
                 compare_peers.py converts the PyTorch module, ModernBERT): nncf.quantize with
                 model_type TRANSFORMER, calibrated on the inputs the system is judged on: workload
                 (a) the random batch itself (one sample per row), workload (b) the test set's first
                 CALIB_ROWS rows; one IR per calibration set (ov_int8/<set>/). The ops it leaves
                 unquantized run in f32 (forced and read back: the int8 + f32 split of the other int8
                 peers); the runtime precision of every FullyConnected/MatMul layer of the compiled
                 model is read back, and none in int8 fails the system.
  ct2-int8       CTranslate2 Encoder with compute_type int8_float32 on the `ct2` conversion (int8
                 weights and GEMMs, f32 elsewhere), the compute type read back from the Encoder.

Heavy libraries are imported inside the functions, as in bench/compare_peers.py.
"""

import json
import shutil
import time
from pathlib import Path

SYSTEMS = ["ort-int8", "openvino-int8", "ct2-int8"]
CALIB_ROWS = 64  # workload (b): the test set's first rows calibrate openvino-int8
# ORT's integer ops after quantize_dynamic (and after the session's own fusions of them)
ORT_INT8_OPS = ("QAttention", "MatMulInteger", "DynamicQuantizeMatMul", "QEmbedLayerNormalization", "QGemm",
                "MatMulIntegerToFloat")


def sources(paths: list) -> dict:
    """What a cached quantized model was made from (size, mtime): redone when that changes."""
    return {str(p): [p.stat().st_size, int(p.stat().st_mtime)] for p in paths}


def _cached(stamp: Path, want: dict) -> bool:
    try:
        return json.loads(stamp.read_text()).get("sources") == want
    except (OSError, ValueError):
        return False


# ---------------------------------------------------------------- ONNX Runtime

def quantize_ort(art: Path, log) -> None:
    out = art / "onnx_int8"
    src = art / "onnx" / "model_ort.onnx"
    want = sources([src])
    if (out / "model.onnx").is_file() and _cached(out / "quant.json", want):
        return
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = art / ".onnx_int8.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    t = time.monotonic()
    quantize_dynamic(src, tmp / "model.onnx", per_channel=True,
                     weight_type=QuantType.QInt8, extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    ops = {}
    for node in onnx.load(str(tmp / "model.onnx"), load_external_data=False).graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    (tmp / "quant.json").write_text(json.dumps({"graph_ops": ops, "sources": want}) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log(f"ORT quantize_dynamic (per-channel QInt8) in {time.monotonic() - t:.1f} s -> {out}: {ort_quantized(art)[1]}")


def ort_model(art: Path) -> tuple:
    """(path, precision, summary of its integer ops) of the quantized graph; exits without one."""
    ok, summary = ort_quantized(art)
    if not ok:
        raise SystemExit(f"compare_int8: no quantized ORT graph ({summary}); prepare ort-int8")
    return art / "onnx_int8" / "model.onnx", "int8 (dynamic; per-channel weights)", summary


def ort_quantized(art: Path) -> tuple:
    """(ok, summary) from onnx_int8/quant.json: ok when the graph has integer ops."""
    path = art / "onnx_int8" / "quant.json"
    if not path.is_file():
        return False, f"{path} is missing (no quantized graph)"
    ops = json.loads(path.read_text())["graph_ops"]
    shown = sorted((n, c) for n, c in ops.items() if n in ORT_INT8_OPS)
    return bool(shown), ", ".join(f"{n} {c}" for n, c in shown) or "no integer ops"


# ---------------------------------------------------------------- OpenVINO + NNCF

def calib_tag(mode: str, batch=None, seq=None, input_csv=None, max_len=None) -> str:
    """The name of a calibration set: (a) the B x S batch, (b) the test set's first rows at length L."""
    if mode == "a":
        return f"a_{batch}x{seq}"
    return f"b_{Path(input_csv).stem}_L{max_len}_first{CALIB_ROWS}"


def ov_int8_xml(art: Path, tag: str) -> Path:
    return art / "ov_int8" / tag / "model.xml"


def ov_ir(art: Path, tag: str) -> Path:
    """The int8 IR for a calibration set, which `prepare` must have made."""
    xml = ov_int8_xml(art, tag)
    if not xml.is_file():
        raise SystemExit(f"compare_int8: no int8 IR at {xml}; prepare openvino-int8 for this input")
    return xml


def ov_fp32_ir(art: Path, static: bool) -> Path:
    """The fp32 IR a workload runs: with static shapes (workload a, no padding) the one converted
    from the PyTorch module where `prepare` made one (ov_torch/: bench/compare_peers.py's
    OV_FROM_TORCH), else the one converted from the ONNX file (ov/)."""
    torch_ir = art / "ov_torch" / "model.xml"
    return torch_ir if static and torch_ir.is_file() else art / "ov" / "model.xml"


def quantize_openvino(art: Path, tag: str, rows, log, inputs: list, ir: Path) -> None:
    """NNCF post-training quantization of the fp32 IR `ir` on rows() (token id lists, one sample
    each), which are read from `inputs` (files)."""
    xml = ov_int8_xml(art, tag)
    want = sources([ir, ir.with_suffix(".bin")] + inputs)
    if xml.is_file() and _cached(xml.parent / "calibration.json", want):
        return
    rows = rows()
    import logging

    import nncf
    import numpy as np
    import openvino as ov

    nncf.set_log_level(logging.WARNING)
    model = ov.Core().read_model(str(ir))
    names = {i.get_any_name() for i in model.inputs}
    items = []
    for r in rows:
        ids = np.asarray(r, dtype=np.int64)[None]
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        items.append({k: v for k, v in feed.items() if k in names})
    t = time.monotonic()
    quantized = nncf.quantize(model, nncf.Dataset(items), model_type=nncf.ModelType.TRANSFORMER,
                              subset_size=len(items))
    fq = sum(1 for op in quantized.get_ops() if op.get_type_name() == "FakeQuantize")
    tmp = xml.parent.with_name(f".{tag}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    ov.save_model(quantized, str(tmp / "model.xml"), compress_to_fp16=False)
    (tmp / "calibration.json").write_text(json.dumps({"samples": len(items), "fake_quantize": fq, "ir": ir.parent.name,
                                                      "nncf": nncf.__version__, "sources": want}) + "\n")
    shutil.rmtree(xml.parent, ignore_errors=True)
    tmp.rename(xml.parent)
    log(f"NNCF int8 IR ({tag}, of {ir.parent.name}/, {len(items)} calibration samples, {fq} FakeQuantize) in "
        f"{time.monotonic() - t:.1f} s -> {xml.parent}")


def ov_precision(compiled, xml: Path, inference_precision: str) -> str:
    """What a compiled int8 IR runs in, from its runtime model: the layers of the FullyConnected /
    MatMul kind whose runtime precision is int8; none fails the system."""
    total = int8 = 0
    for op in compiled.get_runtime_model().get_ops():
        rt = op.get_rt_info()
        layer = rt["layerType"].astype(str) if "layerType" in rt else ""
        if layer in ("FullyConnected", "MatMul", "Convolution"):
            total += 1
            int8 += (rt["runtimePrecision"].astype(str) if "runtimePrecision" in rt else "") in ("u8", "i8")
    if not int8:
        raise SystemExit(f"compare_int8: no layer of the int8 IR {xml} runs in int8 ({total} FullyConnected/MatMul)")
    cached = " (read back when cached)"  # OpenVinoRunner's mark of a precision kept from the compile
    rest = inference_precision.replace(cached, "")
    return f"int8 in {int8} of {total} FullyConnected/MatMul layers, {rest} elsewhere" + \
        (cached if cached in inference_precision else "")


def ov_compile(core, model, config: dict, xml: Path | None, static_shape) -> tuple:
    """(compiled model, note for the setting). An int8 IR (xml) reshaped to static shapes can fail
    OpenVINO's constant folding at compile time (XLM-R with OpenVINO 2026.4: "Check
    'convert->constant_fold(...)' failed", openvinotoolkit/openvino#33446; its fp32 IR and the
    dynamic int8 one compile): that IR is compiled with its dynamic shapes instead, and says so."""
    try:
        return core.compile_model(model, "CPU", config), ""
    except RuntimeError as e:
        if xml is None or not static_shape or "constant_fold" not in str(e):
            raise
    return core.compile_model(core.read_model(str(xml)), "CPU", config), \
        ", dynamic shapes (the static reshape fails constant folding: openvino#33446)"


def prepare(a, systems: set, log, b_rows) -> str | None:
    """The int8 peers' models (after the fp32 conversions they start from); returns the name of
    (b)'s calibration set (None without a test set). b_rows(n): the test set's first n rows, tokenised."""
    if "ort-int8" in systems:
        quantize_ort(a.art, log)
    b_tag = calib_tag("b", input_csv=a.input, max_len=a.max_len) if a.input else None
    if "openvino-int8" in systems:
        import numpy as np

        if a.batch and a.seq:
            ids = a.art / f"ids_{a.batch}x{a.seq}.npy"
            quantize_openvino(a.art, calib_tag("a", a.batch, a.seq), lambda: np.load(ids).tolist(), log, [ids],
                              ov_fp32_ir(a.art, static=True))
        if b_tag:
            quantize_openvino(a.art, b_tag, lambda: b_rows(CALIB_ROWS), log, [a.input],
                              ov_fp32_ir(a.art, static=False))
    return b_tag


# ---------------------------------------------------------------- description

def setting(system: str, k: int, runner=None) -> str:
    if system == "ort-int8":
        quant = f" ({runner.int8_ops})" if runner is not None else ""
        return (f"1 session, intra_op_num_threads={k}, ORT_ENABLE_ALL, quantize_dynamic(per_channel=True, QInt8 "
                f"weights) of the fused graph{quant}; intra-op threads not pinned (ORT affinitizes only at its "
                f"default thread count)")
    if system == "ct2-int8":
        read = f" (read back: {runner.compute_type})" if runner is not None else ""
        return (f"Encoder inter_threads={k}, intra_threads=1, compute_type int8_float32{read}, numpy head; "
                f"threads not pinned (CTranslate2 has no affinity option)")
    raise SystemExit(f"compare_int8: no setting for {system}")
