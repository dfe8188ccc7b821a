// ig_kernels.cu: the Integrated Gradients kernels, built by `cubincache
// build` for every configured SM target and loaded through the loader.
// Every kernel is extern "C" so the loader finds it by its plain name.

// The seed's semantics: one point on the baseline-to-input path.
//   out[i] = baseline[i] + alpha * (input[i] - baseline[i])
extern "C" __global__ void interpolate_input(float *out, const float *baseline, const float *input,
                                             float alpha, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = baseline[i] + alpha * (input[i] - baseline[i]);
}

// The seed's semantics: a copy of `point` with one coordinate moved.
//   out = point; out[dim] += delta
extern "C" __global__ void perturb_dimension(float *out, const float *point, int n, int dim,
                                             float delta)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = point[i] + (i == dim ? delta : 0.0f);
}
