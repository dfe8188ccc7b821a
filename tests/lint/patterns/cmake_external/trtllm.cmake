# Modelled on nctu6/vllm-tensorrt 95c8e29a, cmake/external_projects/
# tensorrt_llm.cmake: three environment variables may give the archs, which
# reach CMAKE_ARGS through list(JOIN); the same CMAKE_ARGS carry options
# from the environment that are no CUDA arch or flag (ENABLE_UCX, a
# TensorRT root): those are no finding.
if(NOT DEFINED CUDA_ARCHS OR CUDA_ARCHS STREQUAL "")
  if(DEFINED ENV{CUDA_ARCHS})
    set(CUDA_ARCHS "$ENV{CUDA_ARCHS}")
  elseif(DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(CUDA_ARCHS "$ENV{TORCH_CUDA_ARCH_LIST}")
  endif()
endif()
set(ARGS -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE} -DENABLE_UCX=$ENV{VLLM_TLLM_ENABLE_UCX})
if(DEFINED ENV{TENSORRT_ROOT})
  list(APPEND ARGS -DTENSORRT_ROOT=$ENV{TENSORRT_ROOT})
endif()
string(REPLACE "," ";" _list "${CUDA_ARCHS}")
set(_out "")
foreach(_arch ${_list})
  string(REPLACE "." "" _arch "${_arch}")
  list(APPEND _out "${_arch}")
endforeach()
list(JOIN _out ";" TLLM_ARCHS)
list(APPEND ARGS -DCMAKE_CUDA_ARCHITECTURES=${TLLM_ARCHS})
ExternalProject_Add(trtllm SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR}/trt CMAKE_ARGS ${ARGS} INSTALL_COMMAND "")
