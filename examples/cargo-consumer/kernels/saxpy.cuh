// saxpy.cuh: the kernel's arithmetic, in a header so that a change here
// reaches cargo through the dependencies `cubincache build` records.
#pragma once
__device__ inline float saxpy_one(float a, float x, float y) { return a * x + y; }
