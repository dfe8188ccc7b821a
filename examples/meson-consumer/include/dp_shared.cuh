// dp_shared.cuh: what the two sources of the dp bundle share (found through
// the bundle's include directory, as a project's include/ would be).
#pragma once
#define DP_CHILD_THREADS 256
__device__ float dp_transform(float x); // defined in dp_helper.cu
