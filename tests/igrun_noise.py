"""igrun_noise.py: igrun's noise generator in Python, for tests that feed
the same noise to PyTorch or Captum. Input b has its own xoshiro256**,
seeded by the splitmix64 outputs 4b to 4b + 3 of the seed, and draws with
Marsaglia's polar method in double (two per accepted pair) in the order
igrun adds them: sample by sample, feature by feature. Its contract is
src/ig/explain.c's; tests/cli/igrun_io.py holds igrun to it."""
import math

M64 = (1 << 64) - 1


def _rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


def igrun_noise(seed, inputs, per_input):
    """igrun's standard normal draws for `inputs` inputs, `per_input` each
    (samples x features): a list of lists."""
    return [igrun_gaussians(seed, per_input, b) for b in range(inputs)]


def igrun_gaussians(seed, count, b=0):
    """The first `count` standard normal draws of input b's generator."""
    state, s = (seed + 4 * b * 0x9E3779B97F4A7C15) & M64, []
    for _ in range(4):
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        s.append(z ^ (z >> 31))
    out = []
    while len(out) < count:
        while True:
            uv = []
            for _ in range(2):
                r = (_rotl((s[1] * 5) & M64, 7) * 9) & M64
                t = (s[1] << 17) & M64
                s[2] ^= s[0]
                s[3] ^= s[1]
                s[1] ^= s[2]
                s[0] ^= s[3]
                s[2] ^= t
                s[3] = _rotl(s[3], 45)
                uv.append((r >> 11) * 2.0 ** -53 * 2 - 1)
            q = uv[0] * uv[0] + uv[1] * uv[1]
            if 0 < q < 1:
                break
        f = math.sqrt(-2 * math.log(q) / q)
        out += [uv[0] * f, uv[1] * f]
    return out[:count]
