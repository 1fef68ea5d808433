"""gpusqueeze.ops on the CPU: every operator is registered, its fake implementation gives the output's shape, dtype,
device and layout, bad calls fail with ordinary RuntimeErrors while tracing, and torch.compile(fullgraph=True) traces
a model using the ops as one graph (a ctypes call, the negative control, cannot be traced). Fake CUDA tensors:
no GPU is used. Run: python3 tests/python/test_ops.py (CTest `python_ops`; skipped, exit 77, without PyTorch)."""
import os
import pathlib
import sys
import unittest

if not os.environ.get("GSQ_TEST_INSTALLED"):  # else: the installed wheel's package
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
try:
    import torch
except ImportError:
    print("SKIP: PyTorch is not installed (pip install torch); gpusqueeze.ops needs it")
    sys.exit(77)

import gpusqueeze.kernels as gk  # noqa: E402
import gpusqueeze.ops as gops  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402


def cuda(*shape, dtype=torch.float16):
    return torch.empty(*shape, device="cuda", dtype=dtype)


class Registration(unittest.TestCase):
    def test_every_op_is_a_torch_op_with_a_schema(self):
        for name in gops.OPS:
            op = getattr(torch.ops.gpusqueeze, name)
            self.assertIn(f"gpusqueeze::{name}", str(op.default._schema))

    def test_the_residual_add_says_it_writes_its_residual(self):  # so torch.compile keeps the write (functionalizes it)
        schema = torch.ops.gpusqueeze.add_rms_norm.default._schema
        self.assertEqual([a.name for a in schema.arguments if a.alias_info and a.alias_info.is_write], ["residual"])


class Backend(unittest.TestCase):
    def test_the_registration_asked_for_is_live(self):
        # CTest runs this file twice: with the C++ registration (built here with the system compiler) and with
        # GSQ_OPS_BACKEND=python; GSQ_EXPECT_OPS_BACKEND says which must have loaded, so a silent fallback fails.
        want = os.environ.get("GSQ_EXPECT_OPS_BACKEND")
        if want:
            self.assertEqual(gops.BACKEND, want, gops.BACKEND_WHY)

    def test_real_calls_on_the_cpu_give_our_message(self):
        with self.assertRaises(RuntimeError) as e:
            torch.ops.gpusqueeze.rms_norm(torch.ones(2, 8), None, 1e-6)
        self.assertIn("gpusqueeze::rms_norm: expected a CUDA tensor, got one on cpu", str(e.exception))

    def test_an_extension_built_for_another_pytorch_is_refused(self):
        import json
        import tempfile

        from gpusqueeze import _torch_ext
        with tempfile.TemporaryDirectory() as d:
            lib = pathlib.Path(d) / "gpusqueeze_torch_ops.so"
            lib.write_bytes(b"not loaded")
            with self.assertRaises(_torch_ext.ExtensionError) as e:
                _torch_ext._check_stamp(lib)
            self.assertIn("no readable stamp", str(e.exception))
            stamp = dict(_torch_ext.torch_build(), torch="2.3.0+cu121")
            pathlib.Path(str(lib) + ".json").write_text(json.dumps(stamp))
            with self.assertRaises(_torch_ext.ExtensionError) as e:
                _torch_ext._check_stamp(lib)
            self.assertIn("built for PyTorch 2.3.0+cu121", str(e.exception))
            self.assertIn(f"this is {torch.__version__}", str(e.exception))
            pathlib.Path(str(lib) + ".json").write_text(json.dumps(_torch_ext.torch_build()))
            _torch_ext._check_stamp(lib)  # the same build passes


class FakeOutputs(unittest.TestCase):
    def setUp(self):
        self.mode = FakeTensorMode()
        self.mode.__enter__()

    def tearDown(self):
        self.mode.__exit__(None, None, None)

    def test_row_ops_keep_shape_dtype_and_device(self):
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            x, w = cuda(3, 5, 4096, dtype=dtype), cuda(4096, dtype=dtype)
            for y in (torch.ops.gpusqueeze.layer_norm(x, w, w, 1e-5), torch.ops.gpusqueeze.rms_norm(x, w, 1e-6),
                      torch.ops.gpusqueeze.rms_norm(x, None, 1e-6), torch.ops.gpusqueeze.softmax(x),
                      torch.ops.gpusqueeze.softmax_dropout(x, 0.1, 1234, 0)):
                self.assertEqual((y.shape, y.dtype, y.device.type), (x.shape, dtype, "cuda"))
                self.assertTrue(y.is_contiguous())
            r = cuda(3, 5, 4096, dtype=dtype)
            for y in (torch.ops.gpusqueeze.add_rms_norm(x, r, w, 1e-6), gops.add_rms_norm(x, r, None, 1e-6)):
                self.assertEqual((y.shape, y.dtype, y.device.type), (x.shape, dtype, "cuda"))

    def test_layout_ops_give_the_memory_format(self):
        x = cuda(2, 3, 5, 7)
        y = torch.ops.gpusqueeze.nchw_to_nhwc(x)
        self.assertEqual(y.shape, x.shape)
        self.assertTrue(y.is_contiguous(memory_format=torch.channels_last))
        self.assertEqual(y.stride(), (105, 1, 21, 3))
        z = torch.ops.gpusqueeze.nhwc_to_nchw(y)
        self.assertTrue(z.is_contiguous())

    def test_quantized_linears_give_n_outputs(self):
        n, k = 4096, 1024
        x = cuda(2, 8, k, dtype=torch.bfloat16)
        words, params = cuda(n, k // 8, dtype=torch.int32), cuda(n, k // 128, 2)
        qw4 = gk.QuantizedWeight("gsq.w4/1", n, k, words, params, 128, (0.0, 0.0))
        self.assertEqual(gops.w4a16_linear(x, qw4).shape, (2, 8, n))
        qw8 = gk.QuantizedWeight("gsq.w8/1", n, k, cuda(n, k, dtype=torch.uint8), cuda(n, dtype=torch.float32), 0,
                                 (0.0, 0.0))
        y = gops.w8a16_linear(x, qw8, cuda(n, dtype=torch.bfloat16))
        self.assertEqual((y.shape, y.dtype), ((2, 8, n), torch.bfloat16))

    def test_bad_calls_fail_while_tracing_with_ordinary_errors(self):
        cases = [
            (lambda: torch.ops.gpusqueeze.softmax(cuda(4, 8, dtype=torch.int32)), "dtype torch.int32 is not supported"),
            (lambda: torch.ops.gpusqueeze.rms_norm(cuda(4, 8), cuda(7), 1e-6), "weight must have shape (8,)"),
            (lambda: torch.ops.gpusqueeze.rms_norm(cuda(4, 8), cuda(8, dtype=torch.float32), 1e-6), "dtype"),
            (lambda: torch.ops.gpusqueeze.nchw_to_nhwc(cuda(4, 8, 2)), "expected a 4-D tensor"),
            (lambda: torch.ops.gpusqueeze.add_rms_norm(cuda(4, 8), cuda(4, 9), None, 1e-6),
             "residual must be a contiguous tensor of shape (4, 8)"),
            (lambda: torch.ops.gpusqueeze.add_rms_norm(cuda(4, 8), cuda(8, 4).t(), None, 1e-6), "not contiguous"),
            (lambda: torch.ops.gpusqueeze.add_rms_norm(cuda(4, 8), cuda(4, 8, dtype=torch.bfloat16), None, 1e-6),
             "dtype torch.float16"),
            (lambda: torch.ops.gpusqueeze.softmax_dropout(cuda(4, 8), 1.5, 1, 0), "p must be in [0, 1)"),
            (lambda: torch.ops.gpusqueeze.w4a16_linear(cuda(1, 64, dtype=torch.float32), cuda(8, 8, dtype=torch.int32),
                                                        cuda(8, 1, 2), None, 8, 64, 64), "dtype torch.float32"),
            (lambda: torch.ops.gpusqueeze.w4a16_linear(cuda(1, 32), cuda(8, 8, dtype=torch.int32), cuda(8, 1, 2),
                                                        None, 8, 64, 64), "x has 32 features"),
            (lambda: torch.ops.gpusqueeze.layer_norm(torch.empty(4, 8, dtype=torch.float16), None, None, 1e-5),
             "expected a CUDA tensor"),
        ]
        for call, text in cases:
            with self.assertRaises(RuntimeError) as e:
                call()
            self.assertIn(text, str(e.exception))


class Model(torch.nn.Module):
    def __init__(self):  # built inside a FakeTensorMode: its weight is a fake CUDA tensor
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(64, dtype=torch.float16, device="cuda"), requires_grad=False)

    def forward(self, x):
        h = gops.rms_norm(x, self.w, 1e-6)
        h = torch.ops.gpusqueeze.softmax(h * 2)
        residual = x + 1
        h = gops.add_rms_norm(h, residual, self.w, 1e-6)  # writes residual: the graph must keep that write
        return torch.ops.gpusqueeze.layer_norm(h, self.w, None, 1e-5) + residual


class Compile(unittest.TestCase):
    def test_fullgraph_traces_the_ops_as_one_graph(self):
        graphs = []

        def record(gm, inputs):
            graphs.append(gm)
            return gm.forward

        torch._dynamo.reset()
        with FakeTensorMode(allow_non_fake_inputs=True):
            out = torch.compile(Model(), fullgraph=True, backend=record)(cuda(4, 64))
        self.assertEqual(out.shape, (4, 64))
        self.assertEqual(len(graphs), 1)
        code = graphs[0].code
        for op in ("gpusqueeze.rms_norm", "gpusqueeze.softmax", "gpusqueeze.add_rms_norm", "gpusqueeze.layer_norm"):
            self.assertIn(op, code)

    def test_a_ctypes_call_breaks_the_graph(self):  # why the ops exist: the negative control
        lib = gk._load()  # the C ABI the ctypes path calls (loads without a GPU)

        def through_ctypes(x):
            return x * lib.gsq_kernels_abi_version()

        torch._dynamo.reset()
        with FakeTensorMode(allow_non_fake_inputs=True):
            with self.assertRaises(torch._dynamo.exc.Unsupported):
                torch.compile(through_ctypes, fullgraph=True, backend="eager")(cuda(4, 64))


if __name__ == "__main__":
    print(f"torch {torch.__version__}, gpusqueeze.ops backend {gops.BACKEND} {gops.BACKEND_WHY}")
    unittest.main(verbosity=2)
