#!/usr/bin/env python3
"""make_demo.py: writes igrun's demo model and input (standard library only).

demo.safetensors: an nn.Sequential(Linear(64, 16), Tanh(), Linear(16, 1)) in
the layout safetensors.torch.save_file writes ("0.weight", "0.bias",
"2.weight", "2.bias"; F32; activations in __metadata__). Its 16 hidden units
are Gaussian blob detectors on a 4x4 grid over an 8x8 image; the output
weighs blobs near the centre up and those at the border down, so the model
"looks for brightness in the middle".
demo_input.npy: an 8x8 image of a plus sign, as float32 [1, 64].
With a zero baseline the attributions light up the plus sign's centre."""
import json, math, os, struct

here = os.path.dirname(os.path.abspath(__file__))
W, H = 8, 8
centers = [(1 + 2 * i, 1 + 2 * j) for i in range(4) for j in range(4)]
w1, b1 = [], []
for (cy, cx) in centers:
    row = []
    for y in range(H):
        for x in range(W):
            d2 = (y + 0.5 - cy - 0.5) ** 2 + (x + 0.5 - cx - 0.5) ** 2
            row.append(0.6 * math.exp(-d2 / 3.0))
    w1.append(row)
    b1.append(-0.3)
w2 = []
for (cy, cx) in centers:
    d = math.hypot(cy + 0.5 - H / 2, cx + 0.5 - W / 2)
    w2.append(1.2 * math.exp(-d * d / 6.0) - 0.25)
b2 = [0.1]

def f32(values):
    return b''.join(struct.pack('<f', v) for v in values)

tensors = [('0.weight', [16, 64], f32([v for r in w1 for v in r])),
           ('0.bias', [16], f32(b1)),
           ('2.weight', [1, 16], f32(w2)),
           ('2.bias', [1], f32(b2))]
header, data, off = {'__metadata__': {'activations': 'tanh,identity', 'format': 'pt'}}, b'', 0
for name, shape, raw in tensors:
    header[name] = {'dtype': 'F32', 'shape': shape, 'data_offsets': [off, off + len(raw)]}
    data += raw
    off += len(raw)
hj = json.dumps(header, separators=(',', ':')).encode()
hj += b' ' * ((8 - len(hj) % 8) % 8)
with open(os.path.join(here, 'demo.safetensors'), 'wb') as f:
    f.write(struct.pack('<Q', len(hj)) + hj + data)

img = [0.0] * (W * H)
for k in range(1, 7):
    img[4 * W + k] = 1.0      # the bar of the plus
    img[k * W + 4] = 1.0      # its upright
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 64), }"
pad = (64 - (10 + len(hdr) + 1) % 64) % 64
hdr = hdr + ' ' * pad + '\n'
with open(os.path.join(here, 'demo_input.npy'), 'wb') as f:
    f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode() + f32(img))
