__device__ float reduce(float v) { return v; }
