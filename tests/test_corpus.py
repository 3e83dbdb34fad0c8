"""Every tensor of the real exports in fixtures/corpus/ (and of their deployment versions in
fixtures/deploy/) against onnxruntime: zero wrong, and
the share expressed in input dims may not fall. Table: ``python tests/corpus.py``."""

import pytest

from tests import corpus

# Tensors expressed in input dims today (strict, assume_nonempty). Raise as inference improves.
FLOOR = {
    "bert_classic.onnx": (293, 293),
    "bert_dynamo.onnx": (109, 109),
    "bloom_kv_classic.onnx": (388, 388),
    "bloom_kv_dynamo.onnx": (145, 145),
    "cnn_classic.onnx": (36, 36),
    "cnn_dynamo.onnx": (34, 34),
    "deberta_v2_classic.onnx": (827, 827),
    "deberta_v2_dynamo.onnx": (193, 193),
    "detr_dynamo.onnx": (391, 391),
    "gpt2_classic.onnx": (499, 499),
    "gpt2_dynamo.onnx": (125, 125),
    "llama_classic.onnx": (595, 595),
    "llama_dynamo.onnx": (179, 179),
    "mistral_classic.onnx": (620, 620),
    "mistral_dynamo.onnx": (191, 191),
    "phi3_kv_classic.onnx": (730, 730),
    "phi3_kv_dynamo.onnx": (225, 225),
    "phi3_dynamo.onnx": (197, 197),
    "qwen2_kv_classic.onnx": (633, 633),
    "qwen2_kv_dynamo.onnx": (212, 212),
    "segformer_classic.onnx": (917, 917),
    "segformer_dynamo.onnx": (396, 396),
    "swin_classic.onnx": (591, 591),
    "t5_classic.onnx": (812, 812),
    "vit_torchvision_classic.onnx": (388, 388),
    "vit_torchvision_dynamo.onnx": (113, 113),
    "wav2vec2_classic.onnx": (301, 301),
    "wav2vec2_dynamo.onnx": (178, 178),
    "whisper_classic.onnx": (639, 639),
    "whisper_dynamo.onnx": (275, 275),
    # fixtures/deploy/: quantized, float16, fused and session-optimized versions
    "bert_fused.onnx": (26, 26),
    "gpt2_fused.onnx": (137, 137),
    "bert_fused_int8.onnx": (70, 70),
    "bert_int8.onnx": (356, 356),
    "gpt2_uint8_pre.onnx": (280, 280),
    "cnn_int8.onnx": (60, 60),
    "cnn_qdq.onnx": (60, 60),
    "cnn_qop.onnx": (39, 39),
    "bert_qdq.onnx": (507, 507),
    "bert_fp16.onnx": (294, 294),
    "llama_fp16.onnx": (596, 596),
    "llama_session_ext.onnx": (269, 269),
    "qwen2_kv_session_ext.onnx": (277, 277),
    "qwen2_kv_session_basic.onnx": (310, 310),
    "bert_session_ext.onnx": (120, 120),
    "bert_int8_external.onnx": (356, 356),
}


@pytest.mark.parametrize("assume_nonempty", [False, True], ids=["strict", "nonempty"])
@pytest.mark.parametrize("entry", corpus.entries(), ids=lambda e: e["file"])
def test_corpus_model_against_onnxruntime(entry, assume_nonempty):
    pytest.importorskip("onnxruntime")
    r = corpus.verify(entry, assume_nonempty)
    # Every binding of the corpus runs in onnxruntime today: one that stops running would
    # silently shrink what is compared.
    assert not r["skipped"], r["skipped"]
    assert r["wrong"] == 0, r["details"][:10]
    assert r["in_input_dims"] >= FLOOR[entry["file"]][int(assume_nonempty)], r["unknown_names"][:20]
