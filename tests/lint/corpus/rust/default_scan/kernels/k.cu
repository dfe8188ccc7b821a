extern "C" __global__ void k() {}
