# A module the project includes: the flags from the environment, through
# a variable and a list.
set(_sm "$ENV{TORCH_CUDA_ARCH}")
list(APPEND CUDA_NVCC_FLAGS "-gencode=arch=compute_${_sm},code=sm_${_sm}")
