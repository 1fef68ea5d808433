// A planted layering error for scripts/check_layers.py (CTest layering_catches_a_definition_in_another_library): a
// file of src/probes defining a function src/bench declares. Never compiled.
#include "bench/benchmark.hpp"

namespace gsq::bench {

Suite mem_suite() {
  return {};
}

}  // namespace gsq::bench
