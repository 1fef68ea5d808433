// Synthetic input for the layering test: core including gpu must be reported (scripts/check_layers.py).
#pragma once
#include "gpu/nvml.hpp"
