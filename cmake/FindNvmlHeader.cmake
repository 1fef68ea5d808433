# Locates nvml.h: the CUDA toolkit's include folder first, then PyPI's nvidia-nvml-dev (scripts/setup.sh installs it).
# Only the header is needed at build time; libnvidia-ml.so.1 is opened at run time.
find_path(GSQ_NVML_INCLUDE_DIR nvml.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
if(NOT GSQ_NVML_INCLUDE_DIR)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_FOUND)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c "import importlib.util,os;s=importlib.util.find_spec('nvidia');print(next(p for d in s.submodule_search_locations for p in [os.path.join(d,'cu13','include'),os.path.join(d,'nvml','include')] if os.path.exists(os.path.join(p,'nvml.h'))))"
      OUTPUT_VARIABLE _gsq_nvml_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_gsq_nvml_dir)
      set(GSQ_NVML_INCLUDE_DIR ${_gsq_nvml_dir} CACHE PATH "folder holding nvml.h" FORCE)
    endif()
  endif()
endif()
if(NOT GSQ_NVML_INCLUDE_DIR)
  message(FATAL_ERROR "nvml.h not found: run scripts/setup.sh (installs PyPI's nvidia-nvml-dev) or pass -DGSQ_NVML_INCLUDE_DIR=")
endif()
message(STATUS "nvml.h from ${GSQ_NVML_INCLUDE_DIR}")
