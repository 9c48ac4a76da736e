#!/usr/bin/env python3
"""Writes an NVFP4 linear layer as NVIDIA ModelOpt stores it, quantized by
PyTorch, with activations and PyTorch's reference outputs, for the GPU test
`a_pytorch_checkpoint_loads_and_matches_pytorch` (tests/tests/gpu.rs).

    python3 scripts/modelopt_linear.py .gpu/modelopt_linear.safetensors

Needs torch (with float8_e4m3fn) and safetensors. The file holds

    layer.weight          uint8 [N, K/2]   two e2m1 codes a byte, even K low
    layer.weight_scale    float8_e4m3fn [N, K/16]
    layer.weight_scale_2  float32 []       amax(W) / (6 * 448)
    layer.input_scale     float32 []       amax(x) / (6 * 448)
    x_one, x_many         bfloat16 [1, K], [T, K]
    y_one, y_many         float32 [1, N], [T, N]: x.float() @ W.T in f32

with W the dequantized weight (code * weight_scale * weight_scale_2).
"""
import sys

import torch
from safetensors.torch import save_file

N, K, T = 512, 1024, 200
E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def blocks_of_many_magnitudes(rows, gen):
    """Normal values, each block of 16 scaled by its own power of two."""
    values = torch.randn(rows, K // 16, 16, generator=gen)
    powers = torch.randint(-8, 4, (rows, K // 16, 1), generator=gen).float()
    return (values * torch.exp2(powers)).reshape(rows, K)


def e2m1_codes(q):
    """Nearest e2m1 code of each value, ties to the even code, saturating
    at 6; the sign in bit 3 (so -0.0 is code 8)."""
    m = q.abs()
    code = sum(
        (m > t) if strict else (m >= t)
        for t, strict in [(0.25, 1), (0.75, 0), (1.25, 1), (1.75, 0), (2.5, 1), (3.5, 0), (5.0, 1)]
    ).to(torch.uint8)
    return code | (torch.signbit(q).to(torch.uint8) << 3)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: modelopt_linear.py OUT.safetensors")
    gen = torch.Generator().manual_seed(2026)
    w = blocks_of_many_magnitudes(N, gen)
    weight_scale_2 = w.abs().max() / (6 * 448)
    blocks = w.reshape(N, K // 16, 16)
    amax = blocks.abs().amax(dim=-1)
    # float8_e4m3fn has no saturation on conversion: clamp to its largest.
    weight_scale = (amax / 6 / weight_scale_2).clamp(max=448).to(torch.float8_e4m3fn)
    step = weight_scale.float() * weight_scale_2
    q = torch.where(step[..., None] > 0, blocks / step[..., None], torch.zeros_like(blocks))
    codes = e2m1_codes(q).reshape(N, K)
    weight = (codes[:, 0::2] | (codes[:, 1::2] << 4)).contiguous()
    magnitude = E2M1[(codes & 7).long()] * torch.where((codes & 8) > 0, -1.0, 1.0)
    dequantized = (magnitude.reshape(N, K // 16, 16) * step[..., None]).reshape(N, K)

    x_many = blocks_of_many_magnitudes(T, gen).to(torch.bfloat16)
    x_one = blocks_of_many_magnitudes(1, gen).to(torch.bfloat16)
    input_scale = torch.maximum(x_many.float().abs().max(), x_one.float().abs().max()) / (6 * 448)
    torch.backends.cuda.matmul.allow_tf32 = False
    y_many = x_many.float() @ dequantized.T
    y_one = x_one.float() @ dequantized.T

    save_file(
        {
            "layer.weight": weight,
            "layer.weight_scale": weight_scale.contiguous(),
            "layer.weight_scale_2": weight_scale_2.reshape(()).float(),
            "layer.input_scale": input_scale.reshape(()).float(),
            "x_one": x_one.contiguous(),
            "x_many": x_many.contiguous(),
            "y_one": y_one.contiguous(),
            "y_many": y_many.contiguous(),
        },
        sys.argv[1],
    )
    print(f"wrote {sys.argv[1]}: N={N} K={K} T={T}, weight_scale_2={weight_scale_2:.4g}, input_scale={input_scale:.4g}")


if __name__ == "__main__":
    main()
