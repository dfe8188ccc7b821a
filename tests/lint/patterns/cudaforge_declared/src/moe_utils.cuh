// helpers of the moe kernels
