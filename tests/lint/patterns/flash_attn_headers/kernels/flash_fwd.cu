#include "flash.h"
#include "mask.h"
extern "C" __global__ void fwd(float *x) {}
